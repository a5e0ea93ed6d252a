"""NNCF's static int8 quantisation of an OpenVINO IR, with the choices that decide its speed and quality.

``Int8Options`` holds them: NNCF's preset (``performance``: symmetric activations; ``mixed``: asymmetric ones,
closer for the skewed GELU outputs), the SmoothQuant strength for matrix products (NNCF's transformer default 0.95;
``off`` disables it), how many calibration texts set the activation ranges, which parts stay float (``IGNORABLE``,
found in the graph's structure, so they work on any backbone: no node names are assumed) and, optionally, NNCF's
accuracy-aware quantisation: quantise, then return the most harmful quantisers to float one by one until the mean
cosine of the int8 vectors to the f32 IR's on validation texts (disjoint from the calibration ones) is within
``max_cosine_drop`` of 1 (a label-free metric, so it works with the user's own texts).

The parts (``IGNORABLE``), found from the IR's matrix products with a constant weight ("weight products") and those
of two activations (attention scores and their product with the values):

* ``head``: weight products after pooling (rank-2 input: the stored projection, a trained head);
* ``first-layer`` / ``last-layer``: the first / last transformer layer's weight products (the weight products
  sorted by depth in the graph, cut into as many equal layers as there are attention blocks);
* ``attention-inputs``: each layer's query/key/value projections (its shallowest weight products);
* ``mlp-down``: each layer's MLP output projection (its deepest weight product, whose input carries the outlier
  features);
* ``attention-scores``: the two activation products of every attention block.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from .artefacts import OPENVINO_DIR
from .openvino_ir import DEFAULT_CALIBRATION_SIZE
from .runtimes import row_cosines

logger = logging.getLogger(__name__)

DEFAULT_PRESET = "performance"
PRESETS = (DEFAULT_PRESET, "mixed")
IGNORABLE = ("head", "first-layer", "last-layer", "attention-inputs", "mlp-down", "attention-scores")
DEFAULT_VALIDATION_SIZE = 100
SMOOTH_QUANT_OFF = -1.0  # NNCF's value for "no SmoothQuant"


@dataclass(frozen=True)
class Int8Options:
    """How NNCF quantises the IR. ``smooth_quant_alpha``: None keeps NNCF's transformer default (0.95),
    ``SMOOTH_QUANT_OFF`` disables SmoothQuant; ``max_cosine_drop``: None quantises once, a value turns on NNCF's
    accuracy control with the mean-cosine metric on ``validation_size`` held-back texts."""

    preset: str = DEFAULT_PRESET
    smooth_quant_alpha: float | None = None
    calibration_size: int = DEFAULT_CALIBRATION_SIZE
    ignore: tuple[str, ...] = ()
    max_cosine_drop: float | None = None
    validation_size: int = DEFAULT_VALIDATION_SIZE

    def __post_init__(self) -> None:
        if self.preset not in PRESETS:
            raise ValueError(f"unknown NNCF preset {self.preset!r}; choose one of: {', '.join(PRESETS)}.")
        unknown = [part for part in self.ignore if part not in IGNORABLE]
        if unknown:
            raise ValueError(f"cannot keep {', '.join(map(repr, unknown))} in float: the parts are "
                             f"{', '.join(IGNORABLE)}.")
        if self.smooth_quant_alpha is not None and self.smooth_quant_alpha != SMOOTH_QUANT_OFF \
                and not 0.0 <= self.smooth_quant_alpha <= 1.0:
            raise ValueError(f"SmoothQuant alpha must lie in [0, 1] (or be off), not {self.smooth_quant_alpha}.")
        if self.calibration_size < 1:
            raise ValueError(f"the calibration size must be at least 1, not {self.calibration_size}.")
        if self.max_cosine_drop is not None and not 0.0 < self.max_cosine_drop < 1.0:
            raise ValueError(f"the accuracy-control cosine drop must lie in (0, 1), not {self.max_cosine_drop}.")
        if self.validation_size < 1:
            raise ValueError(f"the validation size must be at least 1, not {self.validation_size}.")

    @property
    def texts_needed(self) -> int:
        """Calibration texts plus, under accuracy control, the validation texts held back from them."""
        return self.calibration_size + (self.validation_size if self.max_cosine_drop is not None else 0)

    def require_texts(self, count: int) -> None:
        """ValueError when ``count`` calibration texts leave none to calibrate on once accuracy control has held
        back its validation texts."""
        if self.max_cosine_drop is not None and count <= self.validation_size:
            raise ValueError(f"accuracy control holds back {self.validation_size} validation texts from the {count} "
                             "calibration texts and needs some left: give more calibration texts (export-onnx "
                             "--calibration) or a smaller validation size. Nothing was written.")

    def describe(self) -> str:
        """One line naming every choice that differs from the defaults ("defaults" when none does)."""
        parts = []
        if self.preset != DEFAULT_PRESET:
            parts.append(f"preset {self.preset}")
        if self.smooth_quant_alpha is not None:
            parts.append("SmoothQuant off" if self.smooth_quant_alpha == SMOOTH_QUANT_OFF
                         else f"SmoothQuant alpha {self.smooth_quant_alpha:g}")
        if self.calibration_size != DEFAULT_CALIBRATION_SIZE:
            parts.append(f"{self.calibration_size} calibration texts")
        if self.ignore:
            parts.append(f"float: {', '.join(self.ignore)}")
        if self.max_cosine_drop is not None:
            parts.append(f"accuracy control (mean cosine drop <= {self.max_cosine_drop:g} on "
                         f"{self.validation_size} texts)")
        return "; ".join(parts) or "defaults"


def _constant_source(node) -> bool:
    """Whether ``node`` is a constant, possibly behind a Convert (an IR saved with compressed weights)."""
    while node.get_type_name() == "Convert":
        node = node.input_value(0).get_node()
    return node.get_type_name() == "Constant"


def graph_parts(model) -> dict[str, list[str]]:
    """The friendly names of the IR's nodes in each ``IGNORABLE`` part (see the module docstring), and ``layers``:
    each layer's weight products. When the weight products do not split into equal layers stacked in depth, only
    ``head`` and ``attention-scores`` are found (``layers`` is empty)."""
    depth: dict[str, int] = {}
    weight_products, activation_products = [], []
    for op in model.get_ordered_ops():
        name = op.get_friendly_name()
        inputs = list(op.input_values())
        depth[name] = 1 + max((depth.get(value.get_node().get_friendly_name(), 0) for value in inputs), default=0)
        if op.get_type_name() != "MatMul":
            continue
        data = [value for value in inputs if not _constant_source(value.get_node())]
        if len(data) == len(inputs):
            activation_products.append(name)
            continue
        rank = data[0].get_partial_shape().rank if data else None
        weight_products.append((depth[name], name, rank.get_length() if rank is not None and rank.is_static else None))
    parts = {"head": [name for _, name, rank in weight_products if rank == 2], "attention-scores": activation_products,
             "layers": []}
    body = sorted((d, name) for d, name, rank in weight_products if rank != 2)
    blocks = len(activation_products) // 2
    if blocks == 0 or len(activation_products) % 2 or len(body) % blocks:
        return parts
    size = len(body) // blocks
    layers = [body[i * size:(i + 1) * size] for i in range(blocks)]
    if any(layers[i][-1][0] >= layers[i + 1][0][0] for i in range(blocks - 1)):
        return parts  # the layers overlap in depth: not a plain stack
    parts["layers"] = [[name for _, name in layer] for layer in layers]
    parts["first-layer"] = parts["layers"][0]
    parts["last-layer"] = parts["layers"][-1]
    parts["attention-inputs"] = [name for layer in layers for d, name in layer if d == layer[0][0]]
    parts["mlp-down"] = [layer[-1][1] for layer in layers if layer[-1][0] > layer[0][0]]
    return parts


def ignored_names(model, ignore: Sequence[str]) -> list[str]:
    """The node names of the parts in ``ignore`` (in the IR's order, each once); ValueError when a part cannot be
    found in this graph."""
    if not ignore:
        return []
    parts = graph_parts(model)
    names: list[str] = []
    for part in ignore:
        found = parts.get(part)
        if not found:
            raise ValueError(f"cannot keep {part!r} in float: this graph has no such part that can be found by "
                             "structure (its weight products do not split into equal layers, or it has none). "
                             f"Parts found: {', '.join(p for p, v in parts.items() if v and p != 'layers') or 'none'}.")
        names.extend(name for name in found if name not in names)
    return names


def _advanced_parameters(options: Int8Options):
    from nncf.quantization.advanced_parameters import AdvancedQuantizationParameters, AdvancedSmoothQuantParameters

    if options.smooth_quant_alpha is None:
        return None
    return AdvancedQuantizationParameters(
        smooth_quant_alphas=AdvancedSmoothQuantParameters(matmul=options.smooth_quant_alpha))


def _mean_cosine_metric(reference: list[np.ndarray], output_name: str | None):
    """NNCF validation function: the mean cosine of the compiled model's vectors (its output ``output_name``,
    default its first) to ``reference`` (per-sample values too, which NNCF uses to rank the quantisers); the
    validation items are (index, inputs) pairs."""
    def validate(compiled, items) -> tuple[float, list[float]]:
        output = compiled.output(output_name) if output_name else compiled.output(0)
        pairs = list(items)
        vectors = np.stack([np.asarray(compiled(inputs)[output], dtype=np.float64).reshape(-1) for _, inputs in pairs])
        targets = np.stack([reference[index].astype(np.float64).reshape(-1) for index, _ in pairs])
        cosines = row_cosines(vectors, targets).tolist()
        return float(np.mean(cosines)), cosines
    return validate


def quantize_openvino_int8(xml: Path, out_xml: Path, items: list[dict[str, np.ndarray]],
                           options: Int8Options | None = None, output_name: str | None = None) -> dict[str, object]:
    """NNCF static int8 quantisation of the IR ``xml`` with ``options``; writes ``out_xml``. ``items`` are the
    calibration inputs (under accuracy control the last ``validation_size`` of them are held back for validation,
    scored against the f32 IR's output ``output_name``, default its first). Returns what the manifest records."""
    import nncf
    import openvino

    options = options or Int8Options()
    options.require_texts(len(items))
    core = openvino.Core()
    model = core.read_model(str(xml))
    names = ignored_names(model, options.ignore)
    common = {"preset": nncf.QuantizationPreset(options.preset), "model_type": nncf.ModelType.TRANSFORMER,
              "ignored_scope": nncf.IgnoredScope(names=names) if names else None}
    entry: dict[str, object] = {"file": f"{OPENVINO_DIR}/{out_xml.name}", "nncf": nncf.__version__,
                                "model_type": "transformer", "options": asdict(options),
                                "options_text": options.describe(), "float_nodes": len(names)}
    if options.max_cosine_drop is None:
        quantized = nncf.quantize(model, nncf.Dataset(items), subset_size=len(items),
                                  advanced_parameters=_advanced_parameters(options), **common)
        entry["calibration_samples"] = len(items)
    else:
        calibration, validation = items[:-options.validation_size], items[-options.validation_size:]
        f32 = {"INFERENCE_PRECISION_HINT": "f32"}
        compiled = core.compile_model(model, "CPU", f32)
        output = compiled.output(output_name) if output_name else compiled.output(0)
        metric = _mean_cosine_metric([np.asarray(compiled(inputs)[output]) for inputs in validation], output_name)
        from nncf.quantization.advanced_parameters import AdvancedAccuracyRestorerParameters

        quantized = nncf.quantize_with_accuracy_control(
            model, nncf.Dataset(calibration), nncf.Dataset(list(enumerate(validation)), lambda pair: pair[1]),
            metric, max_drop=options.max_cosine_drop, drop_type=nncf.DropType.ABSOLUTE,
            subset_size=len(calibration), advanced_quantization_parameters=_advanced_parameters(options),
            advanced_accuracy_restorer_parameters=AdvancedAccuracyRestorerParameters(), **common)
        achieved, _ = metric(core.compile_model(quantized, "CPU", f32), enumerate(validation))
        entry.update(calibration_samples=len(calibration), validation_samples=len(validation),
                     validation_mean_cosine=achieved, target_met=bool(achieved >= 1 - options.max_cosine_drop))
        if not entry["target_met"]:
            logger.warning("NNCF accuracy control did not reach its target: mean cosine %.4f to the f32 vectors on the "
                           "validation texts, asked >= %.4f (the graph is still checked by the parity tolerance).",
                           achieved, 1 - options.max_cosine_drop)
    openvino.save_model(quantized, str(out_xml), compress_to_fp16=False)
    return entry
