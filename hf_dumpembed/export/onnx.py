"""Export a DumpEmbed model as one ONNX graph (tokenizer output -> backbone -> pooling -> projection -> L2).

The graph takes ``input_ids``, ``attention_mask`` (and ``token_type_ids`` when the backbone uses them), with dynamic
batch and sequence axes, and returns ``sentence_embedding``: the vectors the model gives through transformers or
sentence-transformers, so ONNX-only runtimes (onnxruntime, fastembed, OpenVINO) need no pooling or projection code
of their own. The [DUMP] prefix is added by the tokenizer (its tokenizer.json post-processor), as everywhere else.

``model.onnx`` uses standard ONNX operators only (any runtime). ``model_optimized.onnx`` is the same graph with
onnxruntime's transformer fusions (fused attention, skip-LayerNorm, bias-GELU; onnxruntime only, faster on CPU).
Optional artefacts: ``model_int8.onnx`` (onnxruntime int8 of the fused graph, with the choices of ort_int8.py) and
``openvino/openvino_model.xml`` (OpenVINO IR from the portable graph, f32 weights; the f32 or bf16 inference
precision it was checked at is recorded in onnx_export.json), with ``--int8`` also ``openvino_model_int8.xml`` (NNCF
static int8, calibrated on the fit corpus or the user's texts; see openvino_int8_static.py) and with ``--int8-dynamic``
``openvino_model_int8_dynamic.xml`` (int8 weights, activations quantised at run time, nothing calibrated; see
openvino_int8_dynamic.py). Every graph is run after writing and compared with the torch model; one that disagrees beyond
its tolerance is not written (the fused graph is then left out and the export goes on with the portable one).

Decoders: the graph runs the backbone on the whole input, the constant prefix (BOS, [DUMP1..K]) included; it does not
hold that prefix's key/value states as constants, as the torch model's prefix cache (``config.prefix_cache``) does.
The graph's inputs are the tokenizer's output, which carries the prefix, so that every runtime feeds it exactly as
tokenized (fastembed, onnxruntime, OpenVINO: no code of their own); holding the states would mean cutting each row's
prefix out inside the graph (at a data-dependent place under left padding) and running the backbone against a cache,
for a saving of at most P / (P + L) of the work (5 of about 70 tokens for BOS + K = 4 before a 64-token text). The
parity check compares this full graph with the torch model's cached forward, so both are held to the same vectors.
"""

from __future__ import annotations

import importlib
import json
import logging
import shutil
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from .._utils.folders import staged_output
from ..remote import DumpEmbedModel
from ..remote.configuration_dumpembed import PADDING_SENSITIVE_POOLING
from .artefacts import (
    INT8_FILE,
    MANIFEST_FILE,
    ONNX_FILE,
    OPENVINO_DIR,
    OPENVINO_FILE,
    OPENVINO_INT8_DYNAMIC_FILE,
    OPENVINO_INT8_FILE,
    OPTIMIZED_FILE,
    OUTPUT_NAME,
)
from .embedding_graph import EmbeddingGraph, graph_inputs
from .onnx_optimize import SINGLE_FILE_LIMIT, fuse_for_onnxruntime
from .openvino_int8_dynamic import compress_openvino_int8
from .openvino_int8_static import Int8Options, quantize_openvino_int8
from .openvino_ir import calibration_inputs, calibration_sample, convert_openvino, openvino_runner
from .ort_int8 import OrtInt8Options, quantize_onnxruntime_int8
from .prompt_tokenizers import write_prompt_tokenizers
from .runtimes import onnxruntime_runner, row_cosines, torch_vectors
from .stock_compat import copy_tokenizer_files, legacy_tokenizer_config

logger = logging.getLogger(__name__)

OPENVINO_PRECISIONS = ("f32", "bf16")
OPSET = 18

# Parity: fp32 graphs must match to an absolute tolerance; int8 and bf16 change the arithmetic by design, so they
# are held to a minimum cosine similarity with the torch vectors (their max |Δ| is printed too).
FP32_TOLERANCE = 1e-4
MIN_COSINE = {"int8": 0.95, "bf16": 0.99}
PARITY_TEXTS = (
    "A man is eating food.",
    "How do I read a file line by line in Python?",
    "Retrieval models map queries and documents into one vector space, where nearness means relevance. Dense "
    "retrieval ranks passages by the cosine similarity of their embeddings, so long inputs matter too.",
    "x",
    "The quick brown fox jumps over the lazy dog.",
)

EXTRAS = {"onnx": ("onnx", "onnxruntime", "onnxscript", "onnx_ir"), "openvino": ("openvino",),
          "openvino int8": ("openvino", "nncf")}
EXTRA_OPTION = {"openvino int8": "openvino"}


def require(extra: str) -> None:
    """Import the packages of the ``extra`` install option or raise ImportError saying how to install them."""
    missing = []
    for module in EXTRAS[extra]:
        try:
            importlib.import_module(module)
        except ImportError:
            missing.append(module)
    if missing:
        raise ImportError(f"{', '.join(missing)} not installed: the {extra} export needs them. Install with "
                          f"pip install 'hf_dumpembed[{EXTRA_OPTION.get(extra, extra)}]'")


@dataclass
class Parity:
    """One exported graph compared with the torch model on the same batches."""

    name: str
    max_abs_diff: float
    min_cosine: float
    tolerance: str
    ok: bool

    def describe(self) -> str:
        verdict = "ok  " if self.ok else "FAIL"
        return (f"  {verdict} {self.name:<28} max |Δ| {self.max_abs_diff:.1e}  min cosine {self.min_cosine:.6f}  "
                f"({self.tolerance})")


@dataclass
class OnnxExport:
    """What ``export_onnx`` wrote: the folder, the graph inputs, and the parity of each artefact."""

    out_dir: Path
    inputs: list[str]
    dimension: int
    files: list[str] = field(default_factory=list)
    parity: list[Parity] = field(default_factory=list)

    def describe(self) -> str:
        lines = [f"Parity with the torch model ({len(PARITY_TEXTS)} texts; right padding"
                 f"{' and left padding' if any('left' in p.name for p in self.parity) else ''}):"]
        return "\n".join(lines + [p.describe() for p in self.parity])


def compare(name: str, reference: np.ndarray, vectors: np.ndarray, kind: str) -> Parity:
    """Max |Δ| and min cosine of ``vectors`` against ``reference``; NaN or inf anywhere is a failure."""
    finite = bool(np.isfinite(vectors).all()) and vectors.shape == reference.shape
    if finite:
        diff = float(np.abs(vectors - reference).max())
        cosine = float(row_cosines(vectors, reference).min())
    else:
        diff, cosine = float("nan"), float("nan")
    if kind in MIN_COSINE:
        ok = finite and cosine >= MIN_COSINE[kind]
        tolerance = f"min cosine >= {MIN_COSINE[kind]}"
    else:
        ok = finite and diff <= FP32_TOLERANCE
        tolerance = f"max |Δ| <= {FP32_TOLERANCE:g}"
    return Parity(name, diff, cosine, tolerance, ok)


def tokenize(tokenizer, texts: Sequence[str], inputs: list[str], padding_side: str = "right") -> dict[str, np.ndarray]:
    """The graph's inputs for ``texts`` as int64 numpy arrays (padded on ``padding_side``)."""
    tokenizer.padding_side = padding_side
    batch = tokenizer(list(texts), padding=True, truncation=True, return_tensors="np")
    return {name: batch[name].astype(np.int64) for name in inputs}


def export_graph(graph: EmbeddingGraph, example: dict[str, np.ndarray], path: Path) -> None:
    """torch.onnx.export (the dynamo exporter) with dynamic batch and sequence axes, output ``sentence_embedding``."""
    batch, sequence = torch.export.Dim("batch"), torch.export.Dim("sequence")
    args = tuple(torch.from_numpy(value) for value in example.values())
    with torch.inference_mode():
        program = torch.onnx.export(
            graph, args, dynamo=True, opset_version=OPSET, input_names=list(example), output_names=[OUTPUT_NAME],
            dynamic_shapes={name: {0: batch, 1: sequence} for name in example}, optimize=True,
        )
    size = sum(p.numel() * p.element_size() for p in graph.parameters())
    program.save(str(path), external_data=size > SINGLE_FILE_LIMIT)


def parity_batches(tokenizer, inputs: list[str], pooling: str) -> dict[str, dict[str, np.ndarray]]:
    """The batches every graph is checked on: `PARITY_TEXTS` right-padded, left-padded too for a pooling that
    depends on the padding side (`PADDING_SENSITIVE_POOLING`), and the first text alone."""
    batches = {"right padding": tokenize(tokenizer, PARITY_TEXTS, inputs, "right")}
    if pooling in PADDING_SENSITIVE_POOLING:
        batches["left padding"] = tokenize(tokenizer, PARITY_TEXTS, inputs, "left")
    batches["one text"] = tokenize(tokenizer, PARITY_TEXTS[:1], inputs)
    return batches


# What to try when a quantised graph misses its tolerance, appended to the refusal by the check of that graph (the
# figures are one-off checks).
ONNXRUNTIME_INT8_HINT = (
    "\nonnxruntime int8 quantises activations with one scale per tensor, which rounds away the outlier features of "
    "decoders' states (SmolLM2-135M: min cosine 0.91). Try --int8-block-size 128 (a scale per block of 128 input "
    "features: 0.9988 there) or --int8-mlp-fp32 (0.9957), or leave out --int8.")
OPENVINO_INT8_HINT = (
    "\nTry keeping parts in float (--int8-float head attention-inputs), --int8-preset mixed, or calibrating on texts "
    "like the ones you will embed (--calibration PATH); or --int8-dynamic instead (int8 weights, activations "
    "quantised at run time, nothing calibrated: min cosine 0.998 on a trained MiniLM, 0.9986 on SmolLM2-135M).")


def write_tokenizer_files(model_dir: Path, out_dir: Path) -> None:
    """The model's tokenizer files; tokenizer_config.json in the form transformers 4.x and 5.x both read, and a
    tokenizer.json that pads as well as truncates (`pad_in_tokenizer_file`)."""
    copy_tokenizer_files(model_dir, out_dir)
    config_path = out_dir / "tokenizer_config.json"
    if config_path.exists():
        config = legacy_tokenizer_config(json.loads(config_path.read_text()))
        config_path.write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n")
        if (out_dir / "tokenizer.json").exists():
            pad_in_tokenizer_file(out_dir / "tokenizer.json", config)


def pad_in_tokenizer_file(path: Path, tokenizer_config: dict) -> bool:
    """Make ``path`` (a tokenizer.json) pad every batch to its longest text, on the tokenizer's padding side with its
    pad token, so that a bare ``tokenizers.Tokenizer.from_file`` feeds the graph without ``enable_padding`` (the
    graph's inputs are rectangular; without it a batch of texts of different lengths is a ragged array). The model
    folder's own tokenizer.json does not pad (transformers and sentence-transformers pad per call, and reset a
    file's padding when asked not to); the graph is read by runtimes that take the file as it is. Returns False
    (file unchanged) when the tokenizer names no pad token it knows."""
    from tokenizers import Tokenizer

    pad = tokenizer_config.get("pad_token")
    pad = pad.get("content") if isinstance(pad, dict) else pad
    tokenizer = Tokenizer.from_file(str(path))
    pad_id = tokenizer.token_to_id(pad) if isinstance(pad, str) else None
    if pad_id is None:
        logger.warning("%s names no pad token the tokenizer knows: its tokenizer.json does not pad (pad each batch "
                       "yourself).", path.parent)
        return False
    tokenizer.enable_padding(direction=tokenizer_config.get("padding_side") or "right", pad_id=pad_id, pad_token=pad,
                             pad_type_id=0)
    tokenizer.save(str(path))
    return True


def copy_quantization_calibration(model_dir: Path, staging: Path, dimension: int) -> str | None:
    """Copy the folder's quantization.json (its int8 ranges / binary thresholds) when it is sound and covers the
    graph's output dimension, so ``hf_dumpembed.quantize(vectors, export_folder)`` works on the graph's vectors."""
    from ..model.quantization import CALIBRATION_FILE, calibration_problems, read_calibration

    if not (model_dir / CALIBRATION_FILE).is_file():
        return None
    problems = calibration_problems(model_dir)
    if not problems and dimension not in read_calibration(model_dir).dims:
        problems = [f"it does not calibrate the graph's output dimension {dimension}"]
    if problems:
        logger.warning("%s is not copied into the export: %s", CALIBRATION_FILE, "; ".join(problems))
        return None
    shutil.copyfile(model_dir / CALIBRATION_FILE, staging / CALIBRATION_FILE)
    return CALIBRATION_FILE


def add_fused_graph(staging: Path, accept_fused: Callable[[list[Parity]], bool]) -> dict:
    """Write model_optimized.onnx (onnxruntime fusions of model.onnx) when its vectors pass; the manifest entry."""
    try:
        fusions = fuse_for_onnxruntime(staging / ONNX_FILE, staging / OPTIMIZED_FILE)
    except Exception as error:  # noqa: BLE001 - an optional artefact: report it and go on with the portable graph
        logger.warning("onnxruntime fusion failed (%s); only the portable graph is written.", error)
        return {"file": None, "reason": f"fusion failed: {error}"}
    if not accept_fused(fusions):
        for path in staging.glob(f"{OPTIMIZED_FILE}*"):
            path.unlink()
        logger.warning("The onnxruntime-fused graph does not reproduce the model's vectors; left out.")
        return {"file": None, "reason": "parity failed", "fusions": fusions}
    return {"file": OPTIMIZED_FILE, "fusions": fusions}


def check_request(int8: bool, openvino: bool, precision: str, calibration_texts: Sequence[str] | None,
                  int8_options: Int8Options, int8_dynamic: bool = False) -> list[str] | None:
    """Before anything is loaded: the extras installed, a known precision, OpenVINO for its dynamic int8 IR, and
    for OpenVINO static int8 the calibration sample (None when no static int8 IR is asked for)."""
    require("onnx")
    if int8_dynamic and not openvino:
        raise ValueError("int8_dynamic writes an OpenVINO IR (int8 weights, activations quantised at run time): it "
                         "needs openvino=True (export-onnx --openvino --int8-dynamic). Nothing was written.")
    if openvino:
        require("openvino int8" if int8 or int8_dynamic else "openvino")
    if precision not in OPENVINO_PRECISIONS:
        raise ValueError(f"precision must be one of {OPENVINO_PRECISIONS}; got {precision!r}.")
    if not (int8 and openvino):
        return None
    if calibration_texts is None:
        raise ValueError("OpenVINO int8 (int8 with openvino) is quantised statically: it needs calibration texts, "
                         "the texts the model will embed (its fit corpus, or your own; export-onnx "
                         "--calibration PATH), or use int8_dynamic instead (--int8-dynamic: int8 weights, activations "
                         "quantised at run time, no texts needed). Nothing was written.")
    sample = calibration_sample(calibration_texts, int8_options.texts_needed)
    int8_options.require_texts(len(sample))
    return sample


def add_onnxruntime_int8(staging: Path, fused: dict, options: OrtInt8Options, check: Callable[..., bool]) -> dict:
    """Write and check model_int8.onnx, quantised from the fused graph when there is one (ort_int8.py); its manifest
    entry."""
    fused_path = staging / fused["file"] if fused["file"] else None
    entry = quantize_onnxruntime_int8(staging / ONNX_FILE, fused_path, staging / INT8_FILE, options)
    check("onnxruntime int8", "int8", onnxruntime_runner(staging / INT8_FILE), hint=ONNXRUNTIME_INT8_HINT)
    return entry


def add_openvino_static(xml: Path, calibration_items: list[dict[str, np.ndarray]], calibration_source: str | None,
                        check: Callable[..., bool], int8_options: Int8Options) -> dict:
    """Write and check (at f32 precision for the parts left in float) NNCF's static int8 IR of ``xml``; its manifest
    entry."""
    out_xml = xml.with_name(OPENVINO_INT8_FILE)
    logger.info("Quantising the OpenVINO IR to int8 with NNCF on %d calibration texts (%s) ...",
                len(calibration_items), int8_options.describe())
    entry = quantize_openvino_int8(xml, out_xml, calibration_items, int8_options, OUTPUT_NAME)
    check("OpenVINO int8", "int8", openvino_runner(out_xml, "f32", OUTPUT_NAME), hint=OPENVINO_INT8_HINT)
    return {**entry, "calibration_source": calibration_source}


def add_openvino_dynamic(xml: Path, check: Callable[..., bool]) -> dict:
    """Write and check (at f32 precision) the IR of ``xml`` with int8 weights whose activations OpenVINO quantises
    at run time (openvino_int8_dynamic.py); its manifest entry."""
    out_xml = xml.with_name(OPENVINO_INT8_DYNAMIC_FILE)
    logger.info("Compressing the OpenVINO IR's weights to int8 (NNCF, data-free) ...")
    entry = compress_openvino_int8(xml, out_xml)
    check("OpenVINO int8 dynamic", "int8", openvino_runner(out_xml, "f32", OUTPUT_NAME))
    return entry


def add_openvino(staging: Path, precision: str, calibration_items: list[dict[str, np.ndarray]] | None,
                 calibration_source: str | None, check: Callable[..., bool], int8_options: Int8Options,
                 int8_dynamic: bool = False) -> dict[str, dict | None]:
    """Write and check the OpenVINO IR (at ``precision``), given calibration inputs its NNCF static int8 IR, and with
    ``int8_dynamic`` its dynamic int8 IR; the manifest entries of the two int8 IRs (None: not written)."""
    xml = staging / OPENVINO_DIR / OPENVINO_FILE
    convert_openvino(staging / ONNX_FILE, xml)
    kind = "bf16" if precision == "bf16" else "fp32"
    check(f"OpenVINO {precision}", kind, openvino_runner(xml, precision, OUTPUT_NAME))
    static = None
    if calibration_items is not None:
        static = add_openvino_static(xml, calibration_items, calibration_source, check, int8_options)
    dynamic = add_openvino_dynamic(xml, check) if int8_dynamic else None
    return {"openvino_int8": static, "openvino_int8_dynamic": dynamic}


def export_onnx(model_dir: str | Path, out_dir: str | Path, *, int8: bool = False, openvino: bool = False,
                precision: str = "f32", fuse: bool = True, onnxruntime_int8: OrtInt8Options | None = None,
                calibration_texts: Sequence[str] | None = None, calibration_source: str | None = None,
                int8_options: Int8Options | None = None, int8_dynamic: bool = False, overwrite: bool = False,
                trust_remote_code: bool = False) -> OnnxExport:
    """Write ``out_dir``: model.onnx (+ model_optimized.onnx, model_int8.onnx, openvino/), tokenizer files,
    README.md, onnx_export.json. ``fuse``: also write the onnxruntime-fused graph (int8 is quantised from it);
    ``onnxruntime_int8``: how model_int8.onnx is quantised (ort_int8.OrtInt8Options: attention inputs, 7-bit
    weights, MLP down-projections kept fp32, block-wise int8; default: dynamic int8 of the fused graph).
    ``int8`` with ``openvino`` also writes openvino/openvino_model_int8.xml, NNCF's static int8 quantisation
    calibrated on ``calibration_texts`` (required then: the fit corpus or the user's texts; ``calibration_source``
    names them in the manifest); ``int8_options`` are NNCF's choices (preset, SmoothQuant, calibration size, parts
    kept in float, accuracy control; default: NNCF's transformer defaults on 300 texts). ``int8_dynamic`` (with
    ``openvino``) also writes openvino/openvino_model_int8_dynamic.xml: int8 weights, activations quantised by
    OpenVINO at run time (no calibration texts; openvino_int8_dynamic.py).

    Raises ValueError (nothing written) when a graph's vectors disagree with the torch model beyond tolerance, for
    a model that composes a prompt inside its forward (not expressible as one static graph), or for OpenVINO int8
    without calibration texts; UntrustedRemoteCode for a folder whose code is not hf_dumpembed's own, unless
    ``trust_remote_code``.
    """
    from ..model.dumpembed_folder import require_dumpembed_folder
    from ..model.folder_schema import folder_code_may_run

    require_dumpembed_folder(model_dir)
    folder_code_may_run(model_dir, trust_remote_code)  # the export loads the folder's tokenizer with its code
    int8_options = int8_options or Int8Options()
    calibration = check_request(int8, openvino, precision, calibration_texts, int8_options, int8_dynamic)
    model_dir = Path(model_dir)
    model, tokenizer = load_for_export(model_dir)
    prompts = export_prompts(model_dir, model.config)  # before any work: refused where the folder's files disagree
    inputs = graph_inputs(model, tokenizer)
    graph = EmbeddingGraph(model, "token_type_ids" in inputs).eval()
    batches = parity_batches(tokenizer, inputs, model.config.pooling)
    references = {side: torch_vectors(model, batch) for side, batch in batches.items()}
    result = OnnxExport(out_dir=Path(out_dir), inputs=inputs, dimension=int(references["right padding"].shape[1]))

    def check(name: str, kind: str, run: Callable, strict: bool = True, hint: str = "") -> bool:
        """Record the graph's parity; beyond tolerance: raise, ending with ``hint`` (strict), or return False."""
        parities = [compare(f"{name} ({side})", references[side], run(batch), kind) for side, batch in batches.items()]
        for parity in parities:
            logger.info("%s", parity.describe().strip())
        ok = all(p.ok for p in parities)
        if ok or strict:
            result.parity += parities
        if not ok and strict:
            raise ValueError("the exported graph does not reproduce the model's vectors, so nothing was written:\n"
                             + result.describe() + hint)
        return ok

    with staged_output(out_dir, overwrite=overwrite) as staging:
        logger.info("Exporting %s to ONNX (inputs %s) ...", model_dir, ", ".join(inputs))
        export_graph(graph, tokenize(tokenizer, PARITY_TEXTS[:2], inputs), staging / ONNX_FILE)
        check("onnxruntime fp32", "fp32", onnxruntime_runner(staging / ONNX_FILE))
        fused = add_fused_graph(staging, lambda _: check("onnxruntime fp32 fused", "fp32", onnxruntime_runner(
            staging / OPTIMIZED_FILE), strict=False)) if fuse else {"file": None, "reason": "not requested"}
        ort_int8 = add_onnxruntime_int8(staging, fused, onnxruntime_int8, check) if int8 else None
        openvino_entries: dict[str, dict | None] = {"openvino_int8": None, "openvino_int8_dynamic": None}
        if openvino:
            calibration_items = calibration_inputs(tokenizer, calibration, inputs) if calibration else None
            openvino_entries = add_openvino(staging, precision, calibration_items, calibration_source, check,
                                         int8_options, int8_dynamic)
        write_tokenizer_files(model_dir, staging)
        quantization = copy_quantization_calibration(model_dir, staging, result.dimension)
        manifest = {
            "source": str(model_dir.resolve()), "inputs": inputs, "output": OUTPUT_NAME,
            "dimension": result.dimension, "pooling": model.config.pooling, "normalized": bool(model.config.normalize),
            "num_dump_tokens": model.config.num_dump_tokens, "opset": OPSET, "torch": torch.__version__,
            "prompts": prompts, "prompt_tokenizers": write_prompt_tokenizers(staging, prompts),  # export_prompts
            "onnxruntime_fused": fused, "onnxruntime_int8": ort_int8,
            "openvino_precision": precision if openvino else None, **openvino_entries,
            "quantization": quantization, "parity": [asdict(p) for p in result.parity],
        }
        (staging / MANIFEST_FILE).write_text(json.dumps(manifest, indent=2) + "\n")
        from .onnx_readme import render_readme

        (staging / "README.md").write_text(render_readme(model_dir, manifest, staging))
        result.files = sorted(p.relative_to(staging).as_posix() for p in staging.rglob("*") if p.is_file())
    return result


def export_prompts(model_dir: Path, config: Any) -> dict[str, str]:
    """onnx_export.json's ``prompts``: the folder's (`folder_prompts`), with ``query`` and ``document`` always named,
    the texts its ``encode_query`` / ``encode_document`` put first (`side_prompts`; a folder that calls it ``passage``
    keeps that name too). Neither the graph nor tokenizer.json adds them; ``prompt_tokenizers`` records the
    tokenizer_query.json / tokenizer_document.json that do, where written (`write_prompt_tokenizers`)."""
    from ..model.st_files import folder_prompts, side_prompts

    prompts = folder_prompts(model_dir, config)
    return {**prompts, **side_prompts(prompts, config.default_prompt_name)}


def load_for_export(model_dir: Path):
    """The DumpEmbed model (fp32, SDPA attention where the backbone has it, else eager) and its tokenizer; refuses
    models that build a prompt inside."""
    from transformers import AutoTokenizer

    try:
        model = DumpEmbedModel.from_pretrained(model_dir, dtype=torch.float32, attn_implementation="sdpa").eval()
    except ValueError as error:  # backbones without an SDPA path (MPNet, GPT-Neo) export their eager attention
        if "scaled_dot_product_attention" not in str(error):
            raise
        model = DumpEmbedModel.from_pretrained(model_dir, dtype=torch.float32, attn_implementation="eager").eval()
    if model.config.prompt_mode is not None:
        raise ValueError(f"{model_dir} composes a {model.config.prompt_mode!r} prompt inside the model (a data-"
                         "dependent rewrite of the token ids), which one ONNX graph cannot express; serve it with "
                         "transformers or sentence-transformers (trust_remote_code=True).")
    if not model.config.include_prompt and model.config.prompt_token_ids_excluded:
        raise ValueError(f"{model_dir} leaves its prompts out of the pooling (include_prompt=False), found by "
                         "matching each row's first tokens, which one ONNX graph does not do; export it with "
                         "`hf-dumpembed export-st` (stock Pooling reads the prompt length) or serve it with "
                         "trust_remote_code=True.")
    tokenizer = AutoTokenizer.from_pretrained(str(model_dir), trust_remote_code=True)  # the folder being exported
    return model, tokenizer
