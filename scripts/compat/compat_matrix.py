"""Compatibility matrix: a fresh stock export (`hf-dumpembed export-st`) loaded by other client versions.

One virtual environment per client/version, installed from the package registry with the CPU wheel of torch 2.13
pinned first, then the client's pins (everything else as pip resolves it). In each, a fresh Python process loads
the export with `SentenceTransformer(path)` (no remote code, offline), encodes the texts, and reports its versions,
the token ids it fed the model and the vectors. They are compared with the DumpEmbed folder's own vectors
(AutoModel, trust_remote_code=True, in this environment): max |Δ| must be <= 1e-5, and the tokenized input must
carry the [DUMP] prefix exactly as the DumpEmbed tokenizer does.

The model is DumpEmbed K=4 on the embedded all-MiniLM-L6-v2 with a random 128-d projection (`fit --method
random-project`), so the export holds Transformer, Pooling, Normalize, Dense and Normalize modules.

Slow (a few minutes per new environment; environments are reused): not part of the test run.

    python scripts/compat/compat_matrix.py --venv-root runs/compat-venvs --output runs/compat.json

It writes its BENCHMARKS.md section record (scripts/bench/results/compat.json) when it finishes.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from datetime import date
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))  # the BENCHMARKS.md record tools
from benchmarks import Table, command_line, write_record  # noqa: E402

from hf_dumpembed._utils.machine import machine_info

SECTION, ORDER, TITLE = "compat", 16, "Compatibility: the stock export in other client versions"
TORCH = "torch==2.13.0"
TOLERANCE = 1e-5
# name -> pins installed after torch.
MATRIX = {
    "sentence-transformers 3.4.1 + transformers 4.57.6": ["sentence-transformers==3.4.1", "transformers==4.57.6"],
    "sentence-transformers 5.7.0 + transformers 4.57.6": ["sentence-transformers==5.7.0", "transformers==4.57.6"],
    "sentence-transformers 5.7.0 + transformers 5.24.0": ["sentence-transformers==5.7.0", "transformers==5.24.0"],
    "sentence-transformers 6.2.0 + transformers 5.24.0": ["sentence-transformers==6.2.0", "transformers==5.24.0"],
}
TEXTS = [
    "A man is eating food.",
    "How do I read a file line by line in Python?",
    "Retrieval models map queries and documents into one vector space, where nearness means relevance.",
    "x",
    "Open the file, read every line, and close it again. " * 12,
]
CLIENT = """
import json, sys
import sentence_transformers, torch, transformers, tokenizers
from sentence_transformers import SentenceTransformer
texts = json.loads(sys.argv[2])
model = SentenceTransformer(sys.argv[1])
vectors = model.encode(texts, convert_to_numpy=True, batch_size=2)
features = model.tokenize(texts[:1])
print("RESULT " + json.dumps({
    "versions": {"sentence-transformers": sentence_transformers.__version__, "transformers": transformers.__version__,
                 "torch": torch.__version__, "tokenizers": tokenizers.__version__},
    "modules": [type(m).__name__ for m in model],
    "input_ids": features["input_ids"][0].tolist(), "vectors": vectors.tolist()}))
"""


def ensure_venv(root: Path, name: str, pins: list[str]) -> Path:
    """The environment's python, created (torch first, then ``pins``) unless it exists with the same pins."""
    folder = root / name.replace(" + ", "__").replace(" ", "-")
    marker = folder / "compat-pins.json"
    python = folder / "bin" / "python"
    if marker.exists() and json.loads(marker.read_text()) == [TORCH, *pins]:
        return python
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(folder)], check=True)
    for step in ([TORCH], pins):
        print(f"{name}: pip install {' '.join(step)}", flush=True)  # noqa: T201
        subprocess.run([str(python), "-m", "pip", "install", "-q", *step], check=True)
    marker.write_text(json.dumps([TORCH, *pins]))
    return python


def run_client(python: Path, export: Path) -> dict:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    env.pop("PYTHONPATH", None)  # the client never sees hf_dumpembed
    result = subprocess.run([str(python), "-c", CLIENT, str(export), json.dumps(TEXTS)], capture_output=True,
                            text=True, env=env, cwd=tempfile.gettempdir(), timeout=1800)
    lines = [line for line in result.stdout.splitlines() if line.startswith("RESULT ")]
    if result.returncode != 0 or not lines:
        return {"error": "\n".join(result.stderr.strip().splitlines()[-3:])}
    return json.loads(lines[-1][len("RESULT "):])


def build_export(work: Path) -> tuple[Path, Path]:
    from hf_dumpembed.cli import main as cli
    from hf_dumpembed.data.assets import default_encoder_path
    from hf_dumpembed.model.builder import BuildOptions, build
    from hf_dumpembed.model.export import export_stock_st

    model = build(default_encoder_path(), work / "k4", BuildOptions(num_dump_tokens=4))
    cli(["fit", str(model), str(work / "k4-rp128"), "--method", "random-project", "--dim", "128", "--no-plots"])
    return work / "k4-rp128", export_stock_st(work / "k4-rp128", work / "k4-rp128-stock")


def record_tables(result: dict) -> list[Table]:
    rows = []
    for name, row in result["clients"].items():
        if "error" in row:
            rows.append([name, None, None, None, f"fails: {row['error'][-200:]}"])
            continue
        versions = row["versions"]
        rows.append([name, f"torch {versions['torch']}, tokenizers {versions['tokenizers']}",
                     ", ".join(row["modules"]), row["max_abs_diff"],
                     "ok" if row["ok"] else ("wrong [DUMP] prefix" if not row["prefix_ok"] else "vectors differ")])
    return [Table(columns=["client", "also installed", "modules loaded", "max abs diff vs DumpEmbed", "result"],
                  rows=rows, formats={"max abs diff vs DumpEmbed": ".1e"},
                  caption=f"{len(TEXTS)} texts (1 to ~130 tokens); tolerance {TOLERANCE:g}")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--venv-root", type=Path, default=Path("runs/compat-venvs"))
    parser.add_argument("--only", nargs="*", default=None, help="run only these matrix entries (by name)")
    parser.add_argument("--output", type=Path, default=None, help="write the results as JSON here")
    args = parser.parse_args()
    from transformers import AutoTokenizer

    from hf_dumpembed.model.verify import encode_with_automodel

    work = Path(tempfile.mkdtemp(prefix="compat-"))
    model, export = build_export(work)
    reference = encode_with_automodel(model, TEXTS)
    reference_ids = AutoTokenizer.from_pretrained(str(model), trust_remote_code=True)(TEXTS[:1])["input_ids"][0]
    clients = {}
    for name, pins in MATRIX.items():
        if args.only and name not in args.only:
            continue
        row = run_client(ensure_venv(args.venv_root.resolve(), name, pins), export)
        if "error" not in row:
            vectors = np.asarray(row.pop("vectors"))
            diff = float(np.abs(vectors - reference).max()) if vectors.shape == reference.shape else float("inf")
            row["max_abs_diff"] = diff
            row["prefix_ok"] = row.pop("input_ids") == list(reference_ids)
            row["ok"] = bool(np.isfinite(diff) and diff <= TOLERANCE and row["prefix_ok"])
        clients[name] = row
        print(name, {k: v for k, v in row.items() if k != "versions"}, flush=True)  # noqa: T201
    result = {"date": date.today().isoformat(), "clients": clients}
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(json.dumps(result, indent=2))
    write_record(SECTION, tables=record_tables(result), commands=[command_line()], machine=machine_info(),
                 date=result["date"], title=TITLE, order=ORDER)
    if not all(row.get("ok") for row in clients.values()):
        raise SystemExit("Some clients failed (see above).")


if __name__ == "__main__":
    main()
