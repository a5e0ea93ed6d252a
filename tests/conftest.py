"""Offline test set-up: no Hub, caches in a temporary folder, tiny random backbones built once per session."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

# Set before transformers / mteb are imported anywhere: nothing may wait on the network.
_CACHE = Path(tempfile.mkdtemp(prefix="hf_dumpembed-tests-"))
atexit.register(shutil.rmtree, _CACHE, ignore_errors=True)
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("HF_HOME", str(_CACHE / "hf_home"))
os.environ.setdefault("MTEB_CACHE", str(_CACHE / "mteb"))
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import pytest  # noqa: E402

from hf_dumpembed.model.builder import BuildOptions, build  # noqa: E402
from tests import tiny_models  # noqa: E402


@pytest.fixture(scope="session")
def tiny_bert(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_models.save_tiny_bert(tmp_path_factory.mktemp("tiny-bert"))


@pytest.fixture(scope="session")
def tiny_llama(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_models.save_tiny_llama(tmp_path_factory.mktemp("tiny-llama"))


@pytest.fixture(scope="session")
def tiny_gpt2(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_models.save_tiny_gpt2(tmp_path_factory.mktemp("tiny-gpt2"))


@pytest.fixture(scope="session")
def tiny_qwen2(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_models.save_tiny_qwen2(tmp_path_factory.mktemp("tiny-qwen2"))


@pytest.fixture(scope="session")
def bert_dump_model(tiny_bert: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A saved K=4 DumpEmbed model on the tiny BERT (CLS pooling)."""
    return build(tiny_bert, tmp_path_factory.mktemp("bert-dump") / "model", BuildOptions(num_dump_tokens=4))


@pytest.fixture(scope="session")
def llama_dump_model(tiny_llama: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A saved K=3 DumpEmbed model on the tiny Llama (last-token pooling)."""
    return build(tiny_llama, tmp_path_factory.mktemp("llama-dump") / "model", BuildOptions(num_dump_tokens=3))


from collections.abc import Callable  # noqa: E402


@pytest.fixture(scope="session")
def zoo_source(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """A factory ``zoo_source(name) -> Path``: the tests/zoo.py family ``name`` saved once per session."""
    from tests.zoo import FAMILIES

    saved: dict[str, Path] = {}

    def get(name: str) -> Path:
        if name not in saved:
            saved[name] = FAMILIES[name].save(tmp_path_factory.mktemp(f"zoo-{name}") / "source")
        return saved[name]

    return get
