"""The main job on the embedded default models: build, export, and check every load path gives the same vectors.

Every step writes its output folder atomically and is skipped when that folder is already complete, so an
interrupted run resumes where it stopped.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .assets import default_decoder_path, default_encoder_path
from .builder import BuildOptions, build
from .console import say
from .export import export_stock_st
from .verify import ParityReport, check_load_paths

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class QuickstartOptions:
    """Options of `hf-dumpembed quickstart`."""

    output_dir: Path = Path("hf-dumpembed-quickstart")
    num_dump_tokens: int = 4
    decoder: bool = False
    overwrite: bool = False


def _is_complete(folder: Path) -> bool:
    return (folder / "config.json").exists() and (folder / "modules.json").exists()


def _step(number: int, total: int, title: str, out: Path, make: Callable[[], object], overwrite: bool) -> None:
    if _is_complete(out) and not overwrite:
        say(f"[{number}/{total}] {title}: already done ({out}), skipping")
        return
    say(f"[{number}/{total}] {title} -> {out}")
    started = time.perf_counter()
    make()
    say(f"        done in {time.perf_counter() - started:.1f} s")


def run_quickstart(options: QuickstartOptions = QuickstartOptions()) -> dict[str, ParityReport]:
    """Build K=0 and K=K DumpEmbed models from all-MiniLM-L6-v2 (and SmolLM2 with ``decoder``), export, verify."""
    out = Path(options.output_dir)
    encoder = default_encoder_path()
    k = options.num_dump_tokens
    plan: list[tuple[str, Path, Callable[[], object]]] = [
        ("Build the K=0 baseline from all-MiniLM-L6-v2", out / "minilm-k0",
         lambda: build(encoder, out / "minilm-k0", BuildOptions(num_dump_tokens=0), overwrite=True)),
        (f"Build the K={k} [DUMP] model from all-MiniLM-L6-v2", out / f"minilm-k{k}",
         lambda: build(encoder, out / f"minilm-k{k}", BuildOptions(num_dump_tokens=k), overwrite=True)),
        ("Export the [DUMP] model as a stock sentence-transformers pipeline", out / f"minilm-k{k}-stock",
         lambda: export_stock_st(out / f"minilm-k{k}", out / f"minilm-k{k}-stock", overwrite=True)),
    ]
    if options.decoder:
        plan += [
            (f"Build the K={k} [DUMP] model from SmolLM2-135M-Instruct (last-token pooling)", out / f"smollm2-k{k}",
             lambda: build(default_decoder_path(), out / f"smollm2-k{k}", BuildOptions(num_dump_tokens=k),
                           overwrite=True)),
            ("Export the SmolLM2 [DUMP] model as a stock pipeline", out / f"smollm2-k{k}-stock",
             lambda: export_stock_st(out / f"smollm2-k{k}", out / f"smollm2-k{k}-stock", overwrite=True)),
        ]
    total = len(plan) + 1
    for number, (title, folder, make) in enumerate(plan, start=1):
        _step(number, total, title, folder, make, options.overwrite)

    say(f"[{total}/{total}] Encode through AutoModel, SentenceTransformer, MTEB and the stock export")
    reports = {
        name: check_load_paths(out / name, stock_export_dir=out / f"{name}-stock")
        for name in [f"minilm-k{k}"] + ([f"smollm2-k{k}"] if options.decoder else [])
    }
    reports["minilm-k0"] = check_load_paths(out / "minilm-k0")
    say("")
    for name, report in reports.items():
        say(f"{name}: {report.describe()}")
    _show_prefix(out / f"minilm-k{k}")
    failed = [name for name, report in reports.items() if not report.ok]
    if failed:
        raise RuntimeError(f"Load paths disagree for {failed}; see the table above.")
    say(f"\nAll load paths agree. Models are in {out.resolve()}")
    return reports


def _show_prefix(model_dir: Path) -> None:
    """Print how the saved tokenizer prepends the [DUMP] tokens, also under truncation."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(model_dir), trust_remote_code=True)
    text = "Dump tokens give attention somewhere harmless to go."
    full = tokenizer.convert_ids_to_tokens(tokenizer(text)["input_ids"])
    cut = tokenizer.convert_ids_to_tokens(tokenizer(text, truncation=True, max_length=8)["input_ids"])
    say(f"\nTokenized by {model_dir.name}:\n  {' '.join(full)}\n  truncated to 8: {' '.join(cut)}")
