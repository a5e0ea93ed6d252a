"""Encode the same texts through every way a user loads a DumpEmbed folder and compare the vectors."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

logger = logging.getLogger(__name__)

SAMPLE_TEXTS = (
    "A man is eating food.",
    "A man is eating a piece of bread.",
    "The girl is carrying a baby.",
    "A man is riding a horse.",
    "Retrieval models map queries and documents into one vector space, where nearness means relevance.",
)
# An official MTEB retrieval task whose metadata ships with mteb (no download): only used to call the wrapper.
MTEB_METADATA_TASK = "NQHardNegatives"


def document_prompt(model_dir: str | Path) -> str:
    """The prompt sentence-transformers' `encode_document` prepends for this folder ("" when it has none)."""
    path = Path(model_dir) / "config_sentence_transformers.json"
    if not path.is_file():
        return ""
    return (json.loads(path.read_text(encoding="utf-8")).get("prompts") or {}).get("document") or ""


def encode_with_automodel(model_dir: str | Path, texts: list[str], batch_size: int = 32,
                          prompt: str = "") -> np.ndarray:
    """`AutoModel.from_pretrained(..., trust_remote_code=True)` + its own tokenizer; right padding; ``prompt``
    prepended to every text (as sentence-transformers prepends a named prompt)."""
    from transformers import AutoModel, AutoTokenizer

    model = AutoModel.from_pretrained(str(model_dir), trust_remote_code=True).eval()
    tokenizer = AutoTokenizer.from_pretrained(str(model_dir), trust_remote_code=True)
    chunks = []
    with torch.inference_mode():
        for start in range(0, len(texts), batch_size):
            chunk = [prompt + text for text in texts[start : start + batch_size]]
            batch = tokenizer(chunk, padding=True, truncation=True, return_tensors="pt")
            chunks.append(model(**batch).sentence_embedding.float().numpy())
    return np.concatenate(chunks)


def encode_with_sentence_transformers(
    model_dir: str | Path, texts: list[str], trust_remote_code: bool = True
) -> np.ndarray:
    """`SentenceTransformer(path, trust_remote_code=...)`, `encode_document`."""
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(model_dir), trust_remote_code=trust_remote_code)
    return model.encode_document(list(texts), convert_to_numpy=True)


def encode_with_mteb(model_dir: str | Path, texts: list[str]) -> np.ndarray:
    """mteb's stock `SentenceTransformerEncoderWrapper` with `trust_remote_code=True`, as `mteb.evaluate` calls it."""
    import mteb
    from datasets import Dataset
    from mteb.types import PromptType
    from torch.utils.data import DataLoader

    wrapper = mteb.SentenceTransformerEncoderWrapper(str(model_dir), trust_remote_code=True)
    loader = DataLoader(Dataset.from_dict({"text": list(texts)}), batch_size=32)
    return np.asarray(
        wrapper.encode(
            loader,
            task_metadata=mteb.get_task(MTEB_METADATA_TASK).metadata,
            hf_split="test",
            hf_subset="default",
            prompt_type=PromptType.document,
        )
    )


def max_abs_diff(vectors: np.ndarray, reference: np.ndarray) -> float:
    """Largest |difference| between two sets of vectors; inf when their shapes differ (NaN stays NaN: not ok)."""
    vectors, reference = np.asarray(vectors), np.asarray(reference)
    return float(np.abs(vectors - reference).max()) if vectors.shape == reference.shape else float("inf")


@dataclass
class ParityReport:
    """Max absolute difference of each load path's vectors from the reference's (the one parity checker: the
    in-process `check_load_paths` and the push's fresh-process load both fill it)."""

    reference: str = "automodel"
    max_abs_diff: dict[str, float] = field(default_factory=dict)
    dimension: int = 0
    tolerance: float = 1e-5
    calibrated_dims: list[int] | None = None  # quantization.json's output dimensions (None: the folder has none)
    calibration_problems: list[str] = field(default_factory=list)

    def passes(self, path: str) -> bool:
        return self.max_abs_diff[path] <= self.tolerance  # NaN fails

    @property
    def ok(self) -> bool:
        return all(self.passes(path) for path in self.max_abs_diff) and not self.calibration_problems

    def describe(self) -> str:
        lines = [f"embedding dimension {self.dimension}; max |Δ| vs {self.reference} (tolerance {self.tolerance:g}):"]
        for path, diff in self.max_abs_diff.items():
            lines.append(f"  {path:<24} {diff:.2e}  {'ok' if self.passes(path) else 'MISMATCH'}")
        for problem in self.calibration_problems:
            lines.append(f"  quantization calibration: FAIL {problem}")
        if self.calibrated_dims is not None and not self.calibration_problems:
            lines.append(f"  quantization calibration: ok (int8 ranges, binary thresholds at k = "
                         f"{', '.join(map(str, self.calibrated_dims))})")
        return "\n".join(lines)


def compare_vectors(reference: np.ndarray, others: dict[str, np.ndarray], tolerance: float = 1e-5,
                    reference_name: str = "automodel") -> ParityReport:
    """The parity of each of ``others`` (load path -> vectors) with ``reference``."""
    reference = np.asarray(reference)
    return ParityReport(reference=reference_name, dimension=int(reference.shape[-1]), tolerance=tolerance,
                        max_abs_diff={name: max_abs_diff(vectors, reference) for name, vectors in others.items()})


def check_load_paths(
    model_dir: str | Path,
    texts: list[str] | tuple[str, ...] = SAMPLE_TEXTS,
    stock_export_dir: str | Path | None = None,
    include_mteb: bool = True,
    tolerance: float = 1e-5,
    trust_remote_code: bool = False,
) -> ParityReport:
    """Encode ``texts`` through AutoModel, SentenceTransformer, MTEB (and a stock export) and compare.

    The folder's remote code must be hf_dumpembed's own (UntrustedRemoteCode otherwise) unless
    ``trust_remote_code``; a stock export loads with ``trust_remote_code=False`` (none of its code runs)."""
    from ..model.dumpembed_folder import require_dumpembed_folder
    from ..model.folder_schema import folder_code_may_run

    require_dumpembed_folder(model_dir)
    folder_code_may_run(model_dir, trust_remote_code)
    if stock_export_dir is not None and not (Path(stock_export_dir) / "modules.json").is_file():
        raise ValueError(f"--stock {stock_export_dir} is not a sentence-transformers folder (no modules.json); "
                         "export one with `hf-dumpembed export-st`.")
    if isinstance(tolerance, bool) or not isinstance(tolerance, (int, float)) or not 0 <= tolerance < float("inf"):
        raise ValueError(f"tolerance must be a finite number >= 0; got {tolerance!r}.")
    texts = list(texts)
    if not texts or not all(isinstance(t, str) for t in texts):
        raise ValueError("texts must be a non-empty list of strings.")
    reference = encode_with_automodel(model_dir, texts, prompt=document_prompt(model_dir))
    others = {"sentence-transformers": encode_with_sentence_transformers(model_dir, texts)}
    if include_mteb:
        others["mteb"] = encode_with_mteb(model_dir, texts)
    if stock_export_dir is not None:
        others["stock export (no remote)"] = encode_with_sentence_transformers(
            stock_export_dir, texts, trust_remote_code=False
        )
    for name, vectors in others.items():
        if vectors.shape != reference.shape:
            raise ValueError(f"{name} gives vectors of shape {vectors.shape}, AutoModel gives {reference.shape}.")
    report = compare_vectors(reference, others, tolerance)
    check_calibration(model_dir, report)
    return report


def check_calibration(model_dir: str | Path, report: ParityReport) -> ParityReport:
    """Fill ``report``'s calibration fields from ``model_dir``'s quantization.json (if it has one)."""
    from ..model.quantization import CALIBRATION_FILE, CalibrationError, calibration_problems, read_calibration

    if not (Path(model_dir) / CALIBRATION_FILE).is_file():
        return report
    report.calibration_problems = calibration_problems(model_dir)
    try:
        report.calibrated_dims = read_calibration(model_dir).dims
    except CalibrationError:
        report.calibrated_dims = []
    return report
