"""Check a model folder as a user would receive it from the Hub, before anything is uploaded.

Two kinds of folder can be published: a DumpEmbed folder (remote code, ``trust_remote_code=True``) and its stock
sentence-transformers export (no remote code). Static checks look at the files (allowlist, safetensors only, code
and card present); the load check copies exactly the files that would be uploaded into a staging folder and loads
them in a fresh Python process where hf_dumpembed cannot be imported, through AutoModel and SentenceTransformer,
and compares the vectors.
"""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
import tempfile
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import yaml

from .._utils.public_paths import private_prefixes
from ..model.folder_schema import (
    FolderShape,
    UntrustedRemoteCode,
    describe,
    folder_code_may_run,
    folder_deviations,
    folder_shape,
    trusted_summary,
)
from .secret_bytes import redact
from .staging_safety import (
    Identity,
    check_file,
    scan_folder,
    stage_verified,
    training_file_problem,
)
from .weights import read_json, weights_problems

# Weight and data formats that unpickle or are not safetensors: never published, even with --trust-remote-code.
FORBIDDEN_SUFFIXES = (".bin", ".pt", ".pth", ".pkl", ".pickle", ".ckpt", ".h5", ".msgpack", ".npy", ".npz", ".joblib")
logger = logging.getLogger(__name__)
CHECK_TEXTS = (
    "A man is eating food.",
    "How do I read a file line by line in Python?",
    "Retrieval models map queries and documents into one vector space, where nearness means relevance.",
)


@dataclass
class FolderReport:
    """What the checks found; ``ok`` only when nothing failed."""

    folder: Path
    kind: FolderShape | None = None
    problems: list[str] = field(default_factory=list)
    passed: list[str] = field(default_factory=list)
    verified: dict[str, Identity] = field(default_factory=dict, repr=False)  # what staging may copy

    @property
    def ok(self) -> bool:
        return not self.problems

    def describe(self) -> str:
        kind = f" ({self.kind.value} folder)" if self.kind else ""
        lines = [f"Checks of {self.folder}{kind}:"]
        lines += [f"  ok    {line}" for line in self.passed]
        lines += [f"  FAIL  {line}" for line in self.problems]
        return redact("\n".join(lines))  # a file named after a token is never printed in clear


class PublishRefused(ValueError):
    """The folder failed its checks; the message is the full report."""

    def __init__(self, report: FolderReport) -> None:
        super().__init__(report.describe() + "\nNothing was uploaded. Fix the problems above and run push again.")
        self.report = report


def folder_kind(folder: Path) -> FolderShape:
    """DUMPEMBED when config.json says model_type dumpembed, STOCK for a sentence-transformers pipeline."""
    if not (folder / "config.json").exists():
        raise FileNotFoundError(f"{folder} has no config.json: it is not a model folder.")
    shape = folder_shape(folder)
    if shape is None:
        raise ValueError(
            f"{folder} is neither a DumpEmbed folder (config.json model_type 'dumpembed') nor a stock "
            "sentence-transformers export (modules.json); build one with `hf-dumpembed build` or `export-st`."
        )
    return shape


def static_checks(folder: Path, report: FolderReport, repo_id: str | None = None,
                  trust_remote_code: bool = False) -> list[str]:
    """File-level checks; returns the files that would be uploaded. Code that is not hf_dumpembed's own remote code
    is refused unless ``trust_remote_code``; it is never imported here."""
    scan = scan_folder(folder)
    report.problems += scan.problems
    files = sorted(scan.files)
    private = tuple(private_prefixes(folder))
    content = [problem for rel in files if (problem := training_file_problem(rel) or
                                            check_file(folder, rel, scan.files[rel], private)) is not None]
    report.problems += content
    if not scan.problems and not content:
        report.passed.append(f"every file is a regular file inside the folder, its content matches its type, and "
                             f"nothing looks like a credential ({len(files)} files)")
    report.verified = dict(scan.files)
    config = read_json(folder / "config.json") or {}
    _check_weights(folder, files, report)
    _check_shape(folder, files, config, report, trust_remote_code)

    if not any(f in files for f in ("tokenizer.json", "tokenizer_config.json")):
        report.problems.append("no tokenizer files (tokenizer.json / tokenizer_config.json)")
    missing_st = [f for f in ("modules.json", "config_sentence_transformers.json") if f not in files]
    if missing_st:
        report.problems.append(f"sentence-transformers files missing: {', '.join(missing_st)}")

    from ..model.quantization import CALIBRATION_FILE, calibration_problems

    if CALIBRATION_FILE in files and not scan.problems and not content:
        calibration = calibration_problems(folder)
        report.problems += calibration
        if not calibration:
            report.passed.append(f"{CALIBRATION_FILE} (int8 ranges, binary thresholds) belongs to these weights")

    card_problem = _card_problem(folder / "README.md", repo_id)
    if card_problem:
        report.problems.append(card_problem)
    else:
        report.passed.append("model card README.md with valid YAML front matter")

    return files


def _check_weights(folder: Path, files: list[str], report: FolderReport) -> None:
    """Problems with the weights: pickles, no safetensors, missing shards, tensors that are not the model's."""
    forbidden = [f for f in files if f.lower().endswith(FORBIDDEN_SUFFIXES)]
    if forbidden:
        report.problems.append(f"pickle-based or non-safetensors weights: {', '.join(forbidden)} (publish safetensors "
                               "only; delete these files)")
    weights = [f for f in files if f.endswith(".safetensors") and "/" not in f]
    if not weights:
        report.problems.append("no *.safetensors weights at the top of the folder")
    index = folder / "model.safetensors.index.json"
    if index.exists():
        shards = set((read_json(index) or {}).get("weight_map", {}).values())
        missing = sorted(s for s in shards if not (folder / s).exists())
        if missing:
            report.problems.append(f"model.safetensors.index.json names missing shards: {', '.join(missing)}")
    if not forbidden and weights:
        weight_problems = weights_problems(folder, files, report.kind is FolderShape.DUMPEMBED)
        report.problems += weight_problems
        if not weight_problems:
            report.passed.append(f"safetensors weights only, exactly the model's tensors, all finite "
                                 f"({', '.join(f for f in files if f.endswith('.safetensors'))})")


def _check_shape(folder: Path, files: list[str], config: dict, report: FolderReport, trust_remote_code: bool) -> None:
    """The folder must have exactly the shape hf_dumpembed's writers produce (`folder_deviations`), unless the user
    trusts it; a stock export never carries code, trusted or not. Nothing in the folder is imported here."""
    code_files = sorted(f for f in files if f.endswith((".py", ".pyc")))
    if report.kind is FolderShape.STOCK and (code_files or config.get("auto_map")):
        report.problems.append(f"a stock export must not carry remote code: {', '.join(code_files) or 'auto_map'} "
                               "(re-export with `hf-dumpembed export-st`)")
    deviations = folder_deviations(folder)
    if deviations and not trust_remote_code:
        report.problems.append("not exactly a folder hf_dumpembed writes (its code could run where it is loaded):\n"
                               f"{describe(deviations)}\n  Publish folders made by hf-dumpembed, or read the files "
                               "and pass --trust-remote-code")
    elif deviations:
        report.passed.append("published as trusted (--trust-remote-code) although it is not exactly a folder "
                             f"hf_dumpembed writes: {'; '.join(str(item) for item in deviations)}")
    else:
        report.passed.append(trusted_summary(folder))


def card_model_id(card_text: str) -> str | None:
    """The model id the card's sentence-transformers snippet loads (None for a card without one)."""
    match = re.search(r'SentenceTransformer\("([^"]+)"', card_text)
    return match.group(1) if match else None


def _card_problem(card: Path, repo_id: str | None = None) -> str | None:
    if not card.exists():
        return ("no model card README.md (render it with `hf-dumpembed card MODEL`, or for a stock export "
                "`hf-dumpembed card STOCK --source MODEL`)")
    from huggingface_hub import metadata_load

    try:
        meta = metadata_load(card)
    except yaml.YAMLError as error:
        return f"README.md front matter is not valid YAML: {error}"
    except ValueError:  # a front matter that is not a mapping
        meta = {}
    if meta is None:
        return "README.md has no YAML front matter (re-render it with `hf-dumpembed card`)"
    if meta.get("pipeline_tag") != "sentence-similarity":
        return "README.md front matter lacks pipeline_tag: sentence-similarity (re-render it with `hf-dumpembed card`)"
    loads = card_model_id(card.read_text())
    if repo_id is not None and loads is not None and loads != repo_id:
        return (f"the card's usage snippets load {loads!r}, not {repo_id!r}: re-render it with `hf-dumpembed card "
                f"MODEL --model-id {repo_id}` (plus --results DIR if it shows an evaluation table)")
    return None


_LOAD_SCRIPT = textwrap.dedent(
    """
    import importlib.abc, json, sys

    class _Block(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] == "hf_dumpembed":
                raise ImportError("hf_dumpembed is not installed where users load the model")

    sys.meta_path.insert(0, _Block())
    import torch
    from sentence_transformers import SentenceTransformer
    from transformers import AutoModel, AutoTokenizer

    torch.set_num_threads(2)
    texts = json.loads(sys.argv[1])
    for path, remote in zip(sys.argv[2::2], [mode == "remote" for mode in sys.argv[3::2]]):
        out = {}
        tokenizer = AutoTokenizer.from_pretrained(path, trust_remote_code=remote)
        model = AutoModel.from_pretrained(path, trust_remote_code=remote).eval()
        out["automodel_class"] = type(model).__name__
        batch = tokenizer(texts, padding=True, truncation=True, return_tensors="pt")
        out["tokens"] = tokenizer.convert_ids_to_tokens(batch["input_ids"][0].tolist())
        if remote:
            with torch.no_grad():
                out["automodel"] = model(**batch).sentence_embedding.float().tolist()
        st = SentenceTransformer(path, trust_remote_code=remote)
        out["st_document"] = st.encode_document(texts, convert_to_numpy=True).tolist()
        out["st_query"] = st.encode_query(texts, convert_to_numpy=True).tolist()
        out["st_one_by_one"] = [st.encode_document([t], convert_to_numpy=True)[0].tolist() for t in texts]
        out["leaked"] = "hf_dumpembed" in sys.modules
        print("RESULT " + json.dumps(out), flush=True)
    """
)


def fresh_process_load(folders: list[tuple[Path, bool]], timeout: float = 900) -> list[dict]:
    """Load each ``(folder, remote)`` in one new Python process (hf_dumpembed blocked, offline, empty module
    cache) and encode `CHECK_TEXTS`; one result per folder. RuntimeError with the process's last lines on failure."""
    args = [item for path, remote in folders for item in (str(path.resolve()), "remote" if remote else "stock")]
    with tempfile.TemporaryDirectory(prefix="hf-dumpembed-check-") as scratch:
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_MODULES_CACHE": str(Path(scratch) / "modules"),
               "TOKENIZERS_PARALLELISM": "false", "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "2")}
        result = subprocess.run([sys.executable, "-c", _LOAD_SCRIPT, json.dumps(list(CHECK_TEXTS)), *args],
                                capture_output=True, text=True, cwd=scratch, env=env, timeout=timeout)
    outs = [json.loads(line[len("RESULT "):]) for line in result.stdout.splitlines() if line.startswith("RESULT ")]
    if result.returncode != 0 or len(outs) != len(folders):
        failed = folders[len(outs)][0] if len(outs) < len(folders) else folders[-1][0]
        tail = "\n".join(result.stderr.strip().splitlines()[-8:])
        raise RuntimeError(f"loading {failed} failed in a fresh process:\n{textwrap.indent(tail, '        ')}")
    return outs


def compare_load_paths(out: dict, report: FolderReport, tolerance: float = 1e-5,
                       reference: np.ndarray | None = None) -> None:
    """Vectors of one folder's fresh-process load compared across load paths (and to ``reference``)."""
    remote = report.kind is FolderShape.DUMPEMBED
    if out["leaked"]:
        report.problems.append("the folder's code imported hf_dumpembed, which users do not have")
    document = np.asarray(out["st_document"])
    comparisons = {
        "SentenceTransformer encode_query vs encode_document": np.asarray(out["st_query"]),
        "SentenceTransformer one text at a time vs batched": np.asarray(out["st_one_by_one"]),
    }
    if remote:
        comparisons = {"AutoModel vs SentenceTransformer": np.asarray(out["automodel"]), **comparisons}
    if reference is not None:
        comparisons["vs the source DumpEmbed folder"] = reference
    from ..export.verify import compare_vectors  # torch-free until a load is compared

    parity = compare_vectors(document, comparisons, tolerance, reference_name="SentenceTransformer encode_document")
    bad = []
    for name, diff in parity.max_abs_diff.items():
        (report.passed if parity.passes(name) else bad).append(f"{name}: max |Δ| {diff:.1e}")
    if not np.isfinite(document).all():
        report.problems.append("the vectors hold NaN or infinite values: the weights or the projection are not "
                               "finite")
    if bad:
        report.problems.append(f"vectors differ across load paths (tolerance {tolerance:g}): " + "; ".join(bad))
    num_dump = sum(token.startswith("[DUMP") for token in out["tokens"])
    report.passed.append(f"fresh process loads it (trust_remote_code={remote}; AutoModel -> {out['automodel_class']}; "
                         f"{document.shape[1]}-d vectors; {num_dump} [DUMP] tokens in the tokenized input)")


def check_folder(folder: str | Path, source: str | Path | None = None, tolerance: float = 1e-5,
                 staging: Path | None = None, repo_id: str | None = None,
                 link_weights: bool | None = None, trust_remote_code: bool = False) -> tuple[FolderReport, list[str]]:
    """Run every check on ``folder``; stage the files into ``staging`` (a temporary folder when None).

    ``source`` is the DumpEmbed folder a stock export came from: its vectors (same fresh process, remote code)
    must equal the export's; ``repo_id`` is where it goes (the card's snippets must load it); ``link_weights``
    hard-links weights into the staging folder (default: only into a temporary one); ``trust_remote_code``
    accepts code that is not hf_dumpembed's own (it then runs, in the fresh process only). Returns the report and
    the files that would be uploaded.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder} is not a folder.")
    report = FolderReport(folder=folder, kind=folder_kind(folder))
    if source is not None:
        if report.kind is not FolderShape.STOCK:
            raise ValueError("--source is for a stock export: it names the DumpEmbed folder it was exported from.")
        if not Path(source).is_dir() or folder_kind(Path(source)) is not FolderShape.DUMPEMBED:
            raise ValueError(f"--source {source} is not a DumpEmbed folder.")
        folder_code_may_run(source, trust_remote_code)  # it is loaded (in a fresh process) with its code
    files = static_checks(folder, report, repo_id, trust_remote_code)
    if report.problems:  # no point loading a folder that is already refused
        return report, files
    how = f"trust_remote_code={report.kind is FolderShape.DUMPEMBED}"
    with tempfile.TemporaryDirectory(prefix="hf-dumpembed-stage-") as scratch:
        target = staging if staging is not None else Path(scratch)
        stage_verified(folder, report.verified, target, staging is None if link_weights is None else link_weights)
        loads = [(target, report.kind is FolderShape.DUMPEMBED)]
        if source is not None:
            loads.insert(0, (Path(source), True))
        try:  # the staged copy the fresh process loads passes the same check (``source`` was checked above)
            folder_code_may_run(target, trust_remote_code)
        except UntrustedRemoteCode as error:
            report.problems.append(f"the staged copy is not a folder hf_dumpembed writes; not loaded: {error}")
            return report, files
        logger.info("Loading %s in a fresh Python process (%s) ...", ", ".join(str(path) for path, _ in loads), how)
        try:
            outs = fresh_process_load(loads)
        except (RuntimeError, subprocess.TimeoutExpired) as error:
            report.problems.append(f"fresh-process load ({how}) failed: {error}")
            return report, files
    reference = None
    if source is not None:
        source_report = FolderReport(folder=Path(source), kind=FolderShape.DUMPEMBED)
        compare_load_paths(outs[0], source_report, tolerance)
        report.problems += [f"source folder: {p}" for p in source_report.problems]
        reference = np.asarray(outs[0]["st_document"])
    compare_load_paths(outs[-1], report, tolerance, reference)
    return report, files
