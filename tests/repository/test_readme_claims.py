"""Claims of the README and docs/ that had no test of their own (see the claim -> test table in tests/README.md).

Also the checks that the table itself names only tests that exist, and only pages that exist.
"""

from __future__ import annotations

import ast
import hashlib
import logging
import re
import shutil
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from transformers import AutoModel, AutoTokenizer

from hf_dumpembed.export.verify import encode_with_automodel
from hf_dumpembed.projections.fit import FitOptions, fit_projection
from tests.support.fit_fixtures import write_corpus

ROOT = Path(__file__).resolve().parents[2]
TABLE = ROOT / "tests" / "README.md"
REFERENCE = re.compile(r"`(tests/[\w/]+\.py)::(\w+)`")
TEXTS = ["A man is eating food.", "hello world second text", "Open the file, read every line."]


def table_references() -> list[tuple[str, str]]:
    """(file, function) of every `tests/x.py::test_name` in the claim -> test table."""
    return REFERENCE.findall(TABLE.read_text())


def test_every_test_the_claim_table_names_exists():
    """Each `tests/file.py::function` in tests/README.md is a test function defined at the top level of that file
    (read with `ast`, as pytest collects it), and every claim row names at least one."""
    text = TABLE.read_text()
    rows = [line for line in text.splitlines()  # claim rows: not the header, the rule or a **section** row
            if line.startswith("| ") and not line.startswith(("| claim", "| **"))]
    assert len(rows) >= 60, "the table lists the README's claims"
    unnamed = [row for row in rows if not REFERENCE.search(row)]
    assert not unnamed, f"claims without a named test: {unnamed}"
    missing = []
    defined: dict[str, set[str]] = {}
    for file, function in table_references():
        if file not in defined:
            path = ROOT / file
            tree = ast.parse(path.read_text()) if path.is_file() else ast.Module(body=[], type_ignores=[])
            defined[file] = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
        if not function.startswith("test_") or function not in defined[file]:
            missing.append(f"{file}::{function}")
    assert not missing, f"tests/README.md names tests that do not exist: {missing}"


PAGE = re.compile(r"(?:README\.md|RELIABILITY\.md|docs/[\w-]+\.md)")


def claim_rows() -> list[list[str]]:
    """The claim rows of the table, each as its cells (claim, where, tests)."""
    rows = []
    for line in TABLE.read_text().splitlines():
        if line.startswith("| ") and not line.startswith(("| claim", "| **")):
            rows.append([cell.strip() for cell in re.split(r"(?<!\\) \| ", line.strip("| "))])
    return rows


def test_every_claim_names_the_pages_that_make_it():
    """The "where (page)" column names, for each claim, README.md, RELIABILITY.md or a page of docs/ that exists, so
    a reader finds the claim's text."""
    header = next(line for line in TABLE.read_text().splitlines() if line.startswith("| claim"))
    assert header == "| claim | where (page) | test |"
    bad = []
    for cells in claim_rows():
        assert len(cells) == 3, f"a claim row without its three cells: {cells}"
        pages = [page.strip() for page in cells[1].split(",")]
        if not pages or any(not PAGE.fullmatch(page) or not (ROOT / page).is_file() for page in pages):
            bad.append(f"{cells[0][:60]}: {cells[1]!r}")
    assert not bad, f"claims whose page is missing or does not exist: {bad}"
    named = {page.strip() for cells in claim_rows() for page in cells[1].split(",")}
    pages = {"README.md", *(f"docs/{path.name}" for path in (ROOT / "docs").glob("*.md"))}
    assert len(named & pages) >= 8, "the table names few of the pages: the where column is out of date"


@pytest.fixture(scope="module")
def spectemp16(llama_dump_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    corpus = write_corpus(tmp_path_factory.mktemp("corpus") / "texts.txt")
    return fit_projection(llama_dump_model, tmp_path_factory.mktemp("fit") / "st16",
                          FitOptions(method="spectemp", dim=16, mode="reference", progress=False, plots=False),
                          corpus=corpus)


def test_saving_a_model_loaded_at_another_k_writes_a_folder_of_that_k(spectemp16: Path, tmp_path: Path):
    """docs/serving.md: "saving such a model writes a k=64 folder" (here k = 8 of a k = 16 fit): the saved folder
    loads at
    k = 8 with the same matrix and vectors and records dim 8."""
    chosen = AutoModel.from_pretrained(spectemp16, trust_remote_code=True, projection_dim=8)
    saved = tmp_path / "k8"
    chosen.save_pretrained(saved)
    for item in spectemp16.iterdir():  # the tokenizer and sentence-transformers files travel with the weights
        if not (saved / item.name).exists() and item.is_file():
            shutil.copyfile(item, saved / item.name)
    reloaded = AutoModel.from_pretrained(saved, trust_remote_code=True)
    assert reloaded.config.projection_dim == 8 and reloaded.config.projection_info["dim"] == 8
    assert torch.equal(reloaded.projection.matrix, chosen.projection.matrix)
    tokenizer = AutoTokenizer.from_pretrained(str(saved), trust_remote_code=True)
    with torch.inference_mode():
        batch = tokenizer(TEXTS, padding=True, return_tensors="pt")
        assert torch.equal(reloaded(**batch).sentence_embedding, chosen(**batch).sentence_embedding)
    assert encode_with_automodel(saved, TEXTS).shape == (len(TEXTS), 8)


def test_onnx_export_refuses_a_model_that_composes_a_prompt(llama_dump_model: Path, tmp_path: Path):
    """docs/serving.md: "Models that compose a prompt inside the model (`--prompt`) cannot be exported" — refused with
    the
    reason, nothing written."""
    pytest.importorskip("onnx")
    from hf_dumpembed.export.onnx import export_onnx

    prompted = fit_projection(llama_dump_model, tmp_path / "eol",
                              FitOptions(method="embedfilter", ratio=1, prompt="prompteol", progress=False,
                                         plots=False))
    with pytest.raises(ValueError, match="composes a 'prompteol' prompt inside the model"):
        export_onnx(prompted, tmp_path / "onnx")
    assert not (tmp_path / "onnx").exists()


def test_one_readable_log_line_per_logging_step(caplog, monkeypatch):
    """docs/training.md: "A readable log line per logging step gives loss, lr, seconds per step and examples per second"
    (rank 0 only)."""
    from hf_dumpembed.training import trainer

    clock = iter([100.0, 102.0, 104.0])
    monkeypatch.setattr(trainer.time, "perf_counter", lambda: next(clock))
    log = trainer.StepLog(global_batch=64)
    state = SimpleNamespace(global_step=0, max_steps=10, is_world_process_zero=True)
    log.on_train_begin(None, state, None)
    state.global_step = 4
    with caplog.at_level(logging.INFO, logger=trainer.__name__):
        log.on_log(None, state, None, logs={"loss": 0.5, "learning_rate": 1e-4})
        log.on_log(None, SimpleNamespace(**{**vars(state), "is_world_process_zero": False}), None,
                   logs={"loss": 0.4, "learning_rate": 1e-4})
    lines = [r.getMessage() for r in caplog.records if r.name == trainer.__name__]
    assert lines == ["step 4/10  loss 0.5000  lr 1.00e-04  0.50 s/step  128.0 examples/s"]


def test_results_are_filed_under_local_name_and_a_content_hash_or_the_snapshot(bert_dump_model: Path, tmp_path):
    """docs/evaluation.md (eval): by default a Hub-cache snapshot gives its own id and commit, any other folder
    `local/<folder>`
    and a sha1 of `config.json` + weights, so results of different weights never mix."""
    try:  # the folder's identity lives next to its ModelMeta (older layout: in the submission module)
        from hf_dumpembed.evaluation.model_meta import content_revision, model_identity
    except ImportError:
        from hf_dumpembed.evaluation.submission import content_revision, model_identity

    folder = tmp_path / "my-model"
    shutil.copytree(bert_dump_model, folder)
    name, revision = model_identity(folder)
    assert name == "local/my-model" and re.fullmatch(r"[0-9a-f]{40}", revision)
    digest = hashlib.sha1()
    for path in [folder / "config.json", *sorted(folder.glob("*.safetensors"))]:
        digest.update(path.name.encode() + path.read_bytes())
    assert revision == digest.hexdigest() == content_revision(folder)
    (folder / "README.md").write_text("a card edit does not change the revision")
    assert model_identity(folder)[1] == revision
    weights = bytearray((folder / "model.safetensors").read_bytes())
    weights[-1] ^= 1  # one bit of one weight
    (folder / "model.safetensors").write_bytes(bytes(weights))
    assert model_identity(folder)[1] != revision
    snapshot = tmp_path / "hub" / "models--acme--tiny" / "snapshots" / ("a" * 40)
    shutil.copytree(bert_dump_model, snapshot)
    assert model_identity(snapshot) == ("acme/tiny", "a" * 40)
    assert model_identity(snapshot, name="org/other", revision="b" * 40) == ("org/other", "b" * 40)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device (the README: every call works on CUDA)")
def test_the_model_runs_on_cuda_with_the_cpu_vectors(bert_dump_model: Path):
    """README (Python): "every one also works on CUDA (models go where torch puts them)". Not run on a CPU-only
    machine."""
    model = AutoModel.from_pretrained(bert_dump_model, trust_remote_code=True).eval()
    tokenizer = AutoTokenizer.from_pretrained(str(bert_dump_model), trust_remote_code=True)
    batch = tokenizer(TEXTS, padding=True, return_tensors="pt")
    with torch.inference_mode():
        cpu = model(**batch).sentence_embedding.numpy()
        model = model.to("cuda")
        gpu = model(**{k: v.to("cuda") for k, v in batch.items()}).sentence_embedding.float().cpu().numpy()
    np.testing.assert_allclose(gpu, cpu, atol=1e-4)


def test_the_claim_table_is_keyed_by_module():
    """Every row sits under the module its first test tests (tests/<layer>/test_<module>[_aspect].py), and every
    heading names a module or test folder that exists."""
    heading, wrong = None, []
    for line in TABLE.read_text().splitlines():
        if match := re.match(r"^\| \*\*`([\w/.]+)`\*\*", line):
            heading = match.group(1)
            if not (ROOT / heading).exists():
                wrong.append(f"heading {heading} does not exist")
        elif heading and (first := re.search(r"`tests/(\w+)/test_(\w+)\.py::", line)):
            layer, stem = first.groups()
            if heading.startswith("tests/"):
                ok = heading == f"tests/{layer}/"
            else:
                module = heading.removeprefix("hf_dumpembed/").removesuffix("/").removesuffix(".py")
                ok = module == layer or (module.startswith(layer + "/") and (
                    stem == module.split("/")[1] or stem.startswith(module.split("/")[1] + "_")))
            if not ok:
                wrong.append(f"{line[:80]}... sits under {heading}")
    assert not wrong, "claim rows under the wrong module:\n" + "\n".join(wrong)
