"""Quantized outputs: the int8 ranges and binary thresholds `hf-dumpembed fit` stores, and `quantize`, which uses them.

sentence-transformers' ``encode(..., precision="int8")`` takes its int8 ranges from the batch it was given (a
batch of queries gets other buckets than the corpus). A fitted folder therefore carries ``quantization.json``,
measured by the fit on its corpus at each output dimension the folder advertises: per-dimension int8 ranges of the
final vectors and binary thresholds (0 as fitted: sentence-transformers' own signs). `quantize` applies them with
``quantize_embeddings`` (``ranges=`` for int8/uint8; the embeddings minus the threshold for binary/ubinary), so a
batch, a reload and another process give the same codes bit for bit.

The file is JSON (numbers written as the shortest decimals of their float32 values, so reading them back as
float32 gives the stored values exactly); it names the projection it was measured on (``projection_sha256``,
over the folder's ``projection.*`` tensors), so a folder whose weights changed afterwards is caught. Its layout,
for consumers without this package (the stock export, the ONNX graph, fastembed): ``{"format": FORMAT, ...,
"dims": {"<k>": {"int8_ranges": [[k minimums], [k maximums]], "binary_threshold": [k values]}}}``;
`NUMPY_SNIPPET` and `SENTENCE_TRANSFORMERS_SNIPPET` turn k-dimensional float32 vectors into the codes `quantize`
gives (docs/serving.md and the ONNX export's README print them; tests run them as printed).
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .projection_record import ProjectionInfo

CALIBRATION_FILE = "quantization.json"
FORMAT = "hf_dumpembed.quantization/1"
PRECISIONS = ("float32", "int8", "uint8", "binary", "ubinary")
REFIT = ("run `hf-dumpembed fit MODEL OUT --method ... --corpus TEXTS`, which stores it (any method; "
         "`--method truncate --dim D`, D the full dimension, keeps the vectors unchanged)")


# Codes without hf_dumpembed, from ``embeddings`` (float32, (n, k)) and the folder's file: `quantize`'s int8 codes
# and its binary bits (``np.packbits`` gives the ubinary bytes; binary = those minus 128, as int8).
NUMPY_SNIPPET = """\
import json
import numpy as np
entry = json.load(open("{folder}/quantization.json"))["dims"][str(embeddings.shape[1])]
low, high = np.asarray(entry["int8_ranges"], dtype=np.float32)
step = (high - low) / 255
codes = (np.clip(np.floor((embeddings - low) / np.where(step == 0, 1, step)), 0, 255) - 128).astype(np.int8)
bits = np.packbits(embeddings > np.asarray(entry["binary_threshold"], dtype=np.float32), axis=-1)  # ubinary"""
SENTENCE_TRANSFORMERS_SNIPPET = """\
import json
import numpy as np
from sentence_transformers.util import quantize_embeddings  # sentence-transformers >= 6.2 (5.x rounds otherwise)
entry = json.load(open("{folder}/quantization.json"))["dims"][str(embeddings.shape[1])]
codes = quantize_embeddings(embeddings, precision="int8", ranges=np.asarray(entry["int8_ranges"], dtype=np.float32))"""


class CalibrationError(ValueError):
    """A folder has no calibration for the requested output, or its calibration file is damaged."""


@dataclass(frozen=True)
class Calibration:
    """Per output dimension k: ``ranges[k]`` (2, k) float32 int8 minimum/maximum rows, ``thresholds[k]`` (k,)
    float32 binary thresholds; ``info``: how they were measured (corpus, texts, statistic, projection hash)."""

    ranges: dict[int, np.ndarray]
    thresholds: dict[int, np.ndarray]
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def dims(self) -> list[int]:
        return sorted(self.ranges)

    def at(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(ranges, thresholds) for ``k``-dimensional outputs; CalibrationError naming the stored dimensions."""
        if k not in self.ranges:
            raise CalibrationError(
                f"this folder's quantization calibration covers output dimensions {self.dims}, not {k}: load the "
                f"model with one of them (projection_dim=K), or refit with --dim {k} (the fit calibrates the "
                "dimension it is fitted at)."
            )
        return self.ranges[k], self.thresholds[k]


def _float32_list(values: np.ndarray) -> list[float]:
    """The shortest decimals that read back as exactly these float32 values."""
    return [float(str(v)) for v in np.asarray(values, np.float32)]


def write_calibration(folder: str | Path, calibration: Calibration) -> Path:
    dims = {str(k): {"int8_ranges": [_float32_list(calibration.ranges[k][0]), _float32_list(calibration.ranges[k][1])],
                     "binary_threshold": _float32_list(calibration.thresholds[k])} for k in calibration.dims}
    path = Path(folder) / CALIBRATION_FILE
    path.write_text(json.dumps({"format": FORMAT, **calibration.info, "dims": dims}, indent=1) + "\n", encoding="utf-8")
    return path


def _vector(value: Any, k: int, where: str) -> np.ndarray:
    if not isinstance(value, list) or len(value) != k or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in value):
        raise CalibrationError(f"{where} must be a list of {k} finite numbers")
    return np.asarray(value, dtype=np.float32)


def parse_calibration(payload: Any, where: str = CALIBRATION_FILE) -> Calibration:
    """A `Calibration` from the JSON object; CalibrationError naming the first bad field."""
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        found = payload.get("format") if isinstance(payload, dict) else type(payload).__name__
        raise CalibrationError(f"{where}: format must be {FORMAT!r}, got {found!r}")
    dims = payload.get("dims")
    if not isinstance(dims, dict) or not dims:
        raise CalibrationError(f"{where}: 'dims' must map each calibrated output dimension to its ranges")
    ranges, thresholds = {}, {}
    for key, entry in dims.items():
        if not key.isdigit() or int(key) < 1 or not isinstance(entry, dict):
            raise CalibrationError(f"{where}: dims key {key!r} must be a positive integer with an object value")
        k = int(key)
        pair = entry.get("int8_ranges")
        if not isinstance(pair, list) or len(pair) != 2:
            raise CalibrationError(f"{where}: dims.{key}.int8_ranges must be [minimums, maximums]")
        low, high = (_vector(row, k, f"{where}: dims.{key}.int8_ranges[{i}]") for i, row in enumerate(pair))
        if bool((low > high).any()):
            raise CalibrationError(f"{where}: dims.{key}.int8_ranges has a minimum above its maximum")
        ranges[k] = np.stack([low, high])
        thresholds[k] = _vector(entry.get("binary_threshold"), k, f"{where}: dims.{key}.binary_threshold")
    info = {name: value for name, value in payload.items() if name not in ("format", "dims")}
    return Calibration(ranges, thresholds, info)


def read_calibration(folder: str | Path) -> Calibration:
    """The calibration stored in ``folder``; CalibrationError saying how to make one when there is none."""
    path = Path(folder) / CALIBRATION_FILE
    if not path.is_file():
        raise CalibrationError(f"{folder} has no {CALIBRATION_FILE} (int8 ranges and binary thresholds of its "
                               f"outputs): {REFIT}.")
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        raise CalibrationError(f"{path} is not valid JSON ({error}): {REFIT}.") from None
    return parse_calibration(payload, str(path))


def projection_fingerprint(folder: str | Path) -> str | None:
    """sha256 over the folder's ``projection.*`` tensors (name, dtype, shape, bytes), read from its safetensors
    weights; None when the folder has no such tensors."""
    from safetensors import safe_open

    folder = Path(folder)
    index = folder / "model.safetensors.index.json"
    if index.is_file():
        weight_map = json.loads(index.read_text(encoding="utf-8")).get("weight_map", {})
        files = sorted({shard for name, shard in weight_map.items() if name.startswith("projection.")})
    else:
        files = ["model.safetensors"]
    tensors: dict[str, np.ndarray] = {}
    for name in files:
        if not (folder / name).is_file():
            return None
        with safe_open(str(folder / name), framework="np") as handle:
            for key in handle.keys():  # noqa: SIM118 - safe_open has no __iter__
                if key.startswith("projection."):
                    tensors[key] = handle.get_tensor(key)
    if not tensors:
        return None
    digest = hashlib.sha256()
    for key in sorted(tensors):
        array = np.ascontiguousarray(tensors[key])
        digest.update(f"{key}\0{array.dtype.str}\0{list(array.shape)}\0".encode() + array.tobytes())
    return digest.hexdigest()


def calibration_problems(folder: str | Path, check_weights: bool = True) -> list[str]:
    """Why ``folder``'s ``quantization.json`` cannot be trusted (empty: it can, or there is none): damaged, for
    dimensions the folder does not serve, or measured on another projection than the folder's."""
    folder = Path(folder)
    if not (folder / CALIBRATION_FILE).is_file():
        return []
    try:
        calibration = read_calibration(folder)
    except CalibrationError as error:
        return [str(error)]
    problems = []
    config = json.loads((folder / "config.json").read_text(encoding="utf-8")) if (folder / "config.json").is_file() \
        else {}
    info = ProjectionInfo.from_config(config)
    served = (info.max_dim if info is not None else None) or config.get("projection_dim") \
        or config.get("embedding_size")
    if info is not None and info.selection is None:
        outside = [k for k in calibration.dims if k != int(info.dim or 0)]
    else:
        outside = [k for k in calibration.dims if served and k > int(served)]
    if outside:
        problems.append(f"{CALIBRATION_FILE} calibrates output dimensions {outside}, which this folder does not "
                        f"serve: {REFIT}.")
    stored = calibration.info.get("projection_sha256")
    if check_weights and stored is not None and (folder / "config.json").is_file():
        actual = projection_fingerprint(folder)
        if actual is not None and actual != stored:
            problems.append(f"{CALIBRATION_FILE} was measured on another projection than the one in this folder's "
                            f"weights (projection_sha256 {stored[:12]}… vs {actual[:12]}…): {REFIT}.")
    return problems


def _folder_of(model: Any) -> str | Path:
    """The folder (or Hub id) behind a path, a transformers model or a SentenceTransformer."""
    if isinstance(model, (str, Path)):
        return model
    for module in [model, *(list(model) if hasattr(model, "__iter__") and hasattr(model, "encode") else [])]:
        inner = getattr(module, "auto_model", module)
        name = getattr(inner, "name_or_path", None) or getattr(getattr(inner, "config", None), "_name_or_path", None)
        if name:
            return name
    raise TypeError("quantize needs a model folder, a Hub id, a DumpEmbed model (AutoModel) or a SentenceTransformer "
                    f"loaded from one; got {type(model).__name__}.")


def load_calibration(model: Any) -> Calibration:
    """The calibration of ``model``: a `Calibration`, a folder or Hub id, an AutoModel or a SentenceTransformer."""
    if isinstance(model, Calibration):
        return model
    source = _folder_of(model)
    if Path(source).is_dir():
        return read_calibration(source)
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import EntryNotFoundError, HFValidationError, LocalEntryNotFoundError

    try:
        return read_calibration(Path(hf_hub_download(str(source), CALIBRATION_FILE)).parent)
    except EntryNotFoundError:
        raise CalibrationError(f"{source} has no {CALIBRATION_FILE}: {REFIT}.") from None
    except (HFValidationError, LocalEntryNotFoundError) as error:
        raise CalibrationError(f"{source} is no local folder, and its {CALIBRATION_FILE} could not be fetched from "
                               f"the Hub ({error}).") from None


def quantize(embeddings: Any, model: Any, precision: str = "int8") -> np.ndarray:
    """``embeddings`` (a (n, k) or (k,) float array or tensor, as the folder outputs them at dimension k) as codes
    with the calibration the fit stored in ``model``'s folder.

    ``model``: the folder (or Hub id), the DumpEmbed AutoModel or the SentenceTransformer loaded from it, or a
    `Calibration`. ``precision``: ``int8``/``uint8`` (one byte per dimension, the stored ranges:
    ``quantize_embeddings(embeddings, precision, ranges=...)``), ``binary``/``ubinary`` (one bit per dimension
    packed into bytes, 1 where a coordinate is above the stored threshold: ``quantize_embeddings(embeddings -
    threshold, precision)``) or ``float32``. Equal inputs give equal codes, in any batch and process.
    """
    from sentence_transformers.util import quantize_embeddings

    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}; got {precision!r}.")
    if hasattr(embeddings, "detach"):
        embeddings = embeddings.detach().cpu().float().numpy()
    embeddings = np.asarray(embeddings)
    if embeddings.ndim not in (1, 2) or embeddings.shape[-1] == 0 or not np.issubdtype(embeddings.dtype, np.floating):
        raise ValueError(f"embeddings must be a float array of shape (n, k) or (k,); got {embeddings.dtype} "
                         f"{embeddings.shape}.")
    if precision == "float32":
        return embeddings.astype(np.float32)
    ranges, threshold = load_calibration(model).at(int(embeddings.shape[-1]))
    if precision in ("int8", "uint8"):
        return quantize_embeddings(embeddings, precision=precision, ranges=ranges)
    return quantize_embeddings(embeddings - threshold, precision=precision)


def bytes_per_vector(k: int, precision: str) -> int:
    """Storage of one k-dimensional vector at ``precision``."""
    return {"float32": 4 * k, "int8": k, "uint8": k}.get(precision, -(-k // 8))
