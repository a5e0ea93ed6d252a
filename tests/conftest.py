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
from tests.support import tiny_models  # noqa: E402


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
    """A factory ``zoo_source(name) -> Path``: the tests/support/zoo.py family ``name`` saved once per session."""
    from tests.support.zoo import FAMILIES

    saved: dict[str, Path] = {}

    def get(name: str) -> Path:
        if name not in saved:
            saved[name] = FAMILIES[name].save(tmp_path_factory.mktemp(f"zoo-{name}") / "source")
        return saved[name]

    return get


# Fixtures shared by several test folders (evaluation runs, the fake Hub).


@pytest.fixture(scope="module")
def known_run(bert_dump_model: Path, tmp_path_factory: pytest.TempPathFactory):
    """``run_eval`` of the tiny K=4 BERT on the known task, filed under MODEL_NAME @ REVISION."""
    from hf_dumpembed.evaluation import run_eval
    from tests.support.eval_fixtures import MODEL_NAME, REVISION, write_known_task

    base = tmp_path_factory.mktemp("known-eval")
    task = write_known_task(base / "KnownTask")
    return run_eval(bert_dump_model, [str(task)], results_dir=base / "results", model_name=MODEL_NAME,
                    revision=REVISION, batch_size=4)


@pytest.fixture(scope="module")
def publishable(bert_dump_model, tmp_path_factory) -> Path:
    """A DumpEmbed folder with projection/training metadata, plots, training files and its card."""
    from hf_dumpembed.model.card import write_card
    from tests.support.card_fixtures import add_projection_metadata, add_training_metadata, copy_model

    folder = copy_model(bert_dump_model, tmp_path_factory.mktemp("publish") / "model")
    add_projection_metadata(folder)
    add_training_metadata(folder)
    write_card(folder, model_id="acme/tiny-dump")
    return folder


@pytest.fixture
def hub(monkeypatch):
    """The fake Hub, reached through huggingface_hub's endpoint setting (HF_ENDPOINT), with a valid token."""
    from huggingface_hub import constants as hub_constants

    from tests.support.publish_fixtures import TOKEN, FakeHub

    with FakeHub() as fake:
        monkeypatch.setenv("HF_ENDPOINT", fake.url)
        monkeypatch.setattr(hub_constants, "ENDPOINT", fake.url)
        monkeypatch.setattr(hub_constants, "HF_HUB_OFFLINE", False)
        # hf_xet uploads through its own Rust client to a CAS server; the fake speaks the HTTP LFS protocol.
        monkeypatch.setattr(hub_constants, "HF_HUB_DISABLE_XET", True)
        monkeypatch.setenv("HF_TOKEN", TOKEN)
        yield fake
