"""README.md of an ONNX export folder: what the graph computes and how to run it (onnxruntime, fastembed, OpenVINO)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

TEMPLATE = """\
# ONNX export of `{name}`

One ONNX graph for the whole embedding model: tokenizer output -> backbone -> {pooling} pooling -> projection ->
{normalized}. Output `sentence_embedding` ({dimension}-d); inputs {inputs} (int64, dynamic batch and sequence
length, either padding side). The tokenizer in this folder prepends the {num_dump} [DUMP] tokens itself (its
`tokenizer.json` post-processor), so tokenize with it and add nothing.

Files: {files}.

Parity with the torch model at export time:

| graph | max abs difference | min cosine | tolerance | ok |
|---|---|---|---|---|
{parity_rows}

## onnxruntime

```python
import numpy as np
import onnxruntime
from tokenizers import Tokenizer

tokenizer = Tokenizer.from_file("{path}/tokenizer.json")
tokenizer.enable_padding(pad_id={pad_id}, pad_token="{pad_token}")
tokenizer.enable_truncation(max_length={max_length})
session = onnxruntime.InferenceSession("{path}/{ort_file}", providers=["CPUExecutionProvider"])

texts = ["How do I read a file line by line in Python?", "Open the file and iterate over it."]
encodings = tokenizer.encode_batch(texts)
feed = {{{feed}}}
embeddings = session.run(["sentence_embedding"], feed)[0]  # already L2-normalised: cosine = dot product
print(embeddings @ embeddings.T)
```

`transformers.AutoTokenizer.from_pretrained("{path}")(texts, padding=True, truncation=True, return_tensors="np")`
gives the same inputs (cast them to int64).{fused_section}{int8_section}

## fastembed (custom model)

```python
from fastembed import TextEmbedding
from fastembed.common.model_description import ModelSource, PoolingType

TextEmbedding.add_custom_model(
    model="{model_id}",
    pooling=PoolingType.DISABLED,  # pooling, projection and normalisation are inside the graph
    normalization=False,
    sources=ModelSource(hf="{model_id}"),
    dim={dimension},
    model_file="{ort_file}",
)
model = TextEmbedding(model_name="{model_id}", specific_model_path="{path}")
embeddings = list(model.embed(["How do I read a file line by line in Python?"]))
```
{openvino_section}
Made with `hf-dumpembed export-onnx` (torch {torch}, opset {opset}). The exporter needs
`pip install 'hf_dumpembed[onnx]'` (and `[openvino]` for `--openvino`); running the graph needs only the
runtime and `tokenizers`.
"""

FUSED_SECTION = """

`model_optimized.onnx` is `model.onnx` with onnxruntime's transformer fusions (fused attention, skip-LayerNorm,
bias-GELU; made by onnxscript's onnxruntime rewrite rules): the same vectors (see the parity table), faster, but its
contrib operators run in onnxruntime only; other runtimes take `model.onnx`. On a CPU shared with other processes,
`options.add_session_config_entry("session.intra_op.allow_spinning", "0")` on the `onnxruntime.SessionOptions`
keeps idle worker threads from busy-waiting."""

INT8_SECTION = """

`{int8_file}` is `{source}` with dynamically quantised int8 weights (onnxruntime `quantize_dynamic`, one scale per
output channel{kept}): faster on CPU, vectors close to but not equal to fp32 (see the parity table). Load it like
`{ort_file}`."""

OPENVINO_SECTION = """
## OpenVINO

```python
import openvino
from transformers import AutoTokenizer

tokenizer = AutoTokenizer.from_pretrained("{path}")
# Checked at export with INFERENCE_PRECISION_HINT={precision}. Always pass it: on CPUs with bf16 support OpenVINO
# otherwise chooses bf16 by itself; "f32" gives the torch model's vectors.
compiled = openvino.Core().compile_model("{path}/openvino/openvino_model.xml", "CPU",
                                         {{"INFERENCE_PRECISION_HINT": "{precision}"}})
batch = tokenizer(["How do I read a file line by line in Python?"], padding=True, truncation=True, return_tensors="np")
embeddings = compiled({{name: batch[name].astype("int64") for name in {inputs_list}}})["sentence_embedding"]
```
{bf16_note}{int8_note}"""

OPENVINO_INT8_NOTE = """
`openvino/openvino_model_int8.xml` is the same IR quantised to int8 by NNCF (static: weights and activations of the
matrix products, ranges measured on {samples} calibration texts{source}). Compile it the same way (the
precision hint then applies to the parts left in float); its vectors are close to but not equal to f32 (see the
parity table). int8 pays on CPUs with VNNI / AMX-INT8 instructions; elsewhere measure it against f32 first.
"""

BF16_NOTE = ("bf16 runs the matrix products in bfloat16 on CPUs with AVX512-BF16 or AMX (elsewhere OpenVINO "
             "falls back to f32): faster, with vectors that differ in the third decimal.\n")


def render_readme(model_dir: Path, manifest: dict[str, Any], folder: Path, model_id: str | None = None) -> str:
    """The README for the export in ``folder`` (``manifest`` as written to onnx_export.json)."""
    import json

    tokenizer_config = json.loads((folder / "tokenizer_config.json").read_text())
    pad_token = tokenizer_config.get("pad_token") or "[PAD]"
    from tokenizers import Tokenizer

    pad_id = Tokenizer.from_file(str(folder / "tokenizer.json")).token_to_id(pad_token) or 0
    inputs = manifest["inputs"]
    path = "path/to/this/folder"
    files = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    rows = "\n".join(
        f"| {p['name']} | {p['max_abs_diff']:.1e} | {p['min_cosine']:.6f} | {p['tolerance'].replace('|', '&#124;')} | "
        f"{'yes' if p['ok'] else 'no'} |" for p in manifest["parity"]
    )
    feed = "".join(f'\n    "{name}": np.array([e.{_ENCODING_FIELD[name]} for e in encodings], dtype=np.int64),'
                   for name in inputs) + "\n"
    int8 = "model_int8.onnx" in files
    fused = "model_optimized.onnx" in files
    ort_file = "model_optimized.onnx" if fused else "model.onnx"
    openvino = manifest.get("openvino_precision")
    return TEMPLATE.format(
        name=model_dir.name, pooling=manifest["pooling"],
        normalized="L2 normalisation" if manifest["normalized"] else "no normalisation",
        dimension=manifest["dimension"], inputs=", ".join(f"`{name}`" for name in inputs),
        num_dump=manifest["num_dump_tokens"], files=", ".join(f"`{f}`" for f in files + ["README.md"]),
        parity_rows=rows, path=path, pad_id=pad_id, pad_token=pad_token,
        max_length=int(min(tokenizer_config.get("model_max_length") or 512, 10**6)), ort_file=ort_file,
        feed=feed, model_id=model_id or f"local/{model_dir.name}-onnx", torch=manifest["torch"],
        opset=manifest["opset"],
        fused_section=FUSED_SECTION if fused else "",
        int8_section=INT8_SECTION.format(int8_file="model_int8.onnx", ort_file=ort_file, kept=(
            "; each layer's MLP down-projection kept in fp32" if manifest.get("int8_fp32_nodes") else ""),
                                         source=manifest.get("int8_source") or "model.onnx") if int8 else "",
        openvino_section=OPENVINO_SECTION.format(
            path=path, precision=openvino, inputs_list=inputs,
            bf16_note=BF16_NOTE if openvino == "bf16" else "", int8_note=_openvino_int8_note(manifest)
        ) if openvino else "",
    )


def _openvino_int8_note(manifest: dict[str, Any]) -> str:
    entry = manifest.get("openvino_int8")
    if not entry:
        return ""
    source = f" from {entry['calibration_source']}" if entry.get("calibration_source") else ""
    return OPENVINO_INT8_NOTE.format(samples=entry["calibration_samples"], source=source)


_ENCODING_FIELD = {"input_ids": "ids", "attention_mask": "attention_mask", "token_type_ids": "type_ids"}
