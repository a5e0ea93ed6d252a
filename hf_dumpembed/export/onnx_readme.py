"""README.md of an ONNX export folder: what the graph computes and how to run it (onnxruntime, fastembed, OpenVINO)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .artefacts import INT8_FILE, ONNX_FILE, OPTIMIZED_FILE

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

Which graph and runtime is fastest depends on the CPU (AVX2 only, AVX-512 VNNI, AVX512-BF16, AMX) and on the text
length: measure it where you serve with `hf-dumpembed serve-bench path/to/this/folder --model MODEL_FOLDER`, which
times each runtime on the same batches, checks its vectors against torch, records the table and its recommendation
in `onnx_export.json` and in a section at the end of this README.
{prompts_section}
## onnxruntime

```python
import numpy as np
import onnxruntime
from tokenizers import Tokenizer

{tokenizer_comment}
tokenizer = Tokenizer.from_file("{path}/tokenizer.json"){padding_line}
session = onnxruntime.InferenceSession("{path}/{ort_file}", providers=["CPUExecutionProvider"])

texts = ["How do I read a file line by line in Python?", "Open the file and iterate over it."]
encodings = tokenizer.encode_batch(texts)
feed = {{{feed}}}
embeddings = session.run(["sentence_embedding"], feed)[0]  # already L2-normalised: cosine = dot product
print(embeddings @ embeddings.T)
```

`transformers.AutoTokenizer.from_pretrained("{path}")(texts, padding=True, truncation=True, return_tensors="np")`
gives the same inputs (cast them to int64), but the graph needs only the runtime and `tokenizers`.{fused_section}\
{int8_section}

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
print(embeddings[0][:4])
```

fastembed tokenizes with this folder's tokenizer.json and sets its own padding and truncation from
`tokenizer_config.json`; its `query_embed` / `passage_embed` add no prompt for a custom model, so put the prompt
(see Prompts above) in front of each text yourself.
{openvino_section}{quantization_section}
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

`{int8_file}` is `{source}`{apart} quantised to int8 by onnxruntime ({method}; options: {options}): faster on CPU,
vectors close to but not equal to fp32 (see the parity table). Load it like `{ort_file}`."""

DYNAMIC_INT8_TEXT = ("`quantize_dynamic`: int8 weights with one scale per output channel, activations quantised per "
                     "tensor at run time")
BLOCKWISE_INT8_TEXT = ("`MatMulNBits`: 8-bit weights with one scale per block of {block_size} input features, "
                       "activations quantised per block at run time")

OPENVINO_SECTION = """
## OpenVINO

```python
import numpy as np
import openvino
from tokenizers import Tokenizer

tokenizer = Tokenizer.from_file("{path}/tokenizer.json"){padding_line}
# Checked at export with INFERENCE_PRECISION_HINT={precision}. Always pass it: on CPUs with bf16 support OpenVINO
# otherwise chooses bf16 by itself; "f32" gives the torch model's vectors.
compiled = openvino.Core().compile_model("{path}/openvino/openvino_model.xml", "CPU",
                                         {{"INFERENCE_PRECISION_HINT": "{precision}"}})

texts = ["How do I read a file line by line in Python?", "Open the file and iterate over it."]
encodings = tokenizer.encode_batch(texts)
feed = {{{feed}}}
embeddings = compiled(feed)["sentence_embedding"]
print(embeddings @ embeddings.T)
```
{bf16_note}{int8_note}"""

OPENVINO_INT8_NOTE = """
`openvino/openvino_model_int8.xml` is the same IR quantised to int8 by NNCF (static: weights and activations of the
matrix products, ranges measured on {samples} calibration texts{source}; NNCF options: {options}). Compile it the
same way (the precision hint then applies to the parts left in float); its vectors are close to but not equal to f32
(see the parity table). int8 pays on CPUs with VNNI / AMX-INT8 instructions; elsewhere measure it against f32 first.
"""

OPENVINO_INT8_DYNAMIC_NOTE = """
`openvino/openvino_model_int8_dynamic.xml` is the same IR with its {products} matrix products' weights in int8
(NNCF's data-free weight compression, {mode}: one scale per output channel; no calibration texts). OpenVINO
quantises each product's activations to int8 as it runs, in groups of {group_size} input channels (stored in the IR's
`runtime_options`, so any loader compiling it uses it). Compile it the same way; with nothing calibrated its vectors
stay close to f32 (see the parity table), and on CPUs with VNNI / AMX it runs between bf16 and static int8.
"""

PROMPTS_SECTION = """
## Prompts

This model reads its texts after a prompt, which neither the graph nor `tokenizer.json` adds (the same strings are
under `prompts` in onnx_export.json):

{listed}

Put it in front of each text before tokenizing, as sentence-transformers' `encode_query` / `encode_document` do, e.g.
`texts = [{example!r} + text for text in queries]` in the snippets below; without it the vectors are not the
model's.{files}
"""

NO_PROMPTS_SECTION = """
## Prompts

This model has no prompts: queries and documents are tokenized alike (`prompts` in onnx_export.json are empty
strings).
"""

PROMPT_FILES_TEXT = """

Or, for a client that takes only a tokenizer file:
{written} the same tokenizer with the prompt's token ids in its template (after the [DUMP] tokens, before the
text). Load a side's file with `Tokenizer.from_file` instead of `tokenizer.json` and pass its texts as they are. A
file is written only where the prompt tokenizes the same whatever text follows it, checked on texts of every kind
at export."""

REFUSED_FILES_TEXT = """

No tokenizer file adds the prompt of:

{refused}"""

QUANTIZATION_SECTION = """
## int8 and binary codes (`quantization.json`)

`quantization.json` holds the calibration of the fitted folder this graph was exported from: for each output
dimension k it covers, `"dims": {{"k": {{"int8_ranges": [minimums, maximums], "binary_threshold": [...]}}}}` (k
float32 values per list, measured on {measured}). Quantize every batch, queries and
documents alike, with these stored ranges; ranges taken from the batch itself (`encode(..., precision="int8")`,
`quantize_embeddings` without `ranges`) give other codes for the same vector. With numpy only, on the
`embeddings` of a snippet above:

```python
{numpy_snippet}
```

The same codes with sentence-transformers, or `hf_dumpembed.quantize(embeddings, "{path}")`:

```python
{st_snippet}
```

Score int8 documents against the float query; binary codes (one bit per dimension, 1 above the threshold) are for
a first pass to rescore.
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
    max_length = int(min(tokenizer_config.get("model_max_length") or 512, 10**6))
    rows = "\n".join(
        f"| {p['name']} | {p['max_abs_diff']:.1e} | {p['min_cosine']:.6f} | {p['tolerance'].replace('|', '&#124;')} | "
        f"{'yes' if p['ok'] else 'no'} |" for p in manifest["parity"]
    )
    feed = "".join(f'\n    "{name}": np.array([e.{_ENCODING_FIELD[name]} for e in encodings], dtype=np.int64),'
                   for name in inputs) + "\n"
    int8 = INT8_FILE in files
    fused = OPTIMIZED_FILE in files
    ort_file = OPTIMIZED_FILE if fused else ONNX_FILE
    openvino = manifest.get("openvino_precision")
    pads = Tokenizer.from_file(str(folder / "tokenizer.json")).padding is not None
    padding_line = "" if pads else f'\ntokenizer.enable_padding(pad_id={pad_id}, pad_token="{pad_token}")'
    tokenizer_comment = f"# tokenizer.json {'pads each batch to its longest text, ' if pads else ''}truncates at " \
                        f"{max_length} tokens"
    return TEMPLATE.format(
        name=model_dir.name, pooling=manifest["pooling"],
        normalized="L2 normalisation" if manifest["normalized"] else "no normalisation",
        dimension=manifest["dimension"], inputs=", ".join(f"`{name}`" for name in inputs),
        num_dump=manifest["num_dump_tokens"], files=", ".join(f"`{f}`" for f in files + ["README.md"]),
        parity_rows=rows, path=path, pad_id=pad_id, pad_token=pad_token,
        ort_file=ort_file, padding_line=padding_line, tokenizer_comment=tokenizer_comment,
        feed=feed, model_id=model_id or f"local/{model_dir.name}-onnx", torch=manifest["torch"],
        opset=manifest["opset"],
        fused_section=FUSED_SECTION if fused else "",
        int8_section=_int8_section(manifest["onnxruntime_int8"], ort_file) if int8 else "",
        openvino_section=OPENVINO_SECTION.format(
            path=path, precision=openvino, feed=feed, padding_line=padding_line,
            bf16_note=BF16_NOTE if openvino == "bf16" else "", int8_note=_openvino_int8_note(manifest)
        ) if openvino else "",
        quantization_section=_quantization_section(folder, path),
        prompts_section=_prompts_section(manifest),
    )


def _prompts_section(manifest: dict[str, Any]) -> str:
    """Which prompt to prepend to which text, and the prompt-side tokenizer files that add it (onnx_export.json's
    ``prompts`` and ``prompt_tokenizers``)."""
    prompts = manifest["prompts"]
    if not any(prompts.values()):
        return NO_PROMPTS_SECTION
    ordered = sorted(prompts.items(), key=lambda item: (item[0] != "query", item[0] != "document"))
    listed = "\n".join(f"- {name}: {text!r}" for name, text in ordered)
    entries = manifest.get("prompt_tokenizers") or {}
    written = {side: entry["file"] for side, entry in entries.items() if entry.get("file") and prompts.get(side)}
    refused = "\n".join(f"- {side}: {entry['reason']}." for side, entry in entries.items() if not entry.get("file"))
    files = ""
    if written:
        names = " and ".join(f"`{file}` ({side})" for side, file in written.items())
        files = PROMPT_FILES_TEXT.format(written=names + (" is" if len(written) == 1 else " are"))
    if refused:
        files += REFUSED_FILES_TEXT.format(refused=refused)
    example = prompts.get("query") or next(text for text in prompts.values() if text)
    return PROMPTS_SECTION.format(listed=listed, example=example, files=files)


def _quantization_section(folder: Path, path: str) -> str:
    """How to turn the graph's vectors into the stored int8 / binary codes, when the export carries the folder's
    quantization.json (empty otherwise)."""
    from ..model.quantization import CALIBRATION_FILE, NUMPY_SNIPPET, SENTENCE_TRANSFORMERS_SNIPPET, read_calibration

    if not (folder / CALIBRATION_FILE).is_file():
        return ""
    texts = read_calibration(folder).info.get("num_texts")
    return QUANTIZATION_SECTION.format(measured=f"{texts} texts of the fit corpus" if texts else "the fit corpus",
                                       numpy_snippet=NUMPY_SNIPPET.format(folder=path),
                                       st_snippet=SENTENCE_TRANSFORMERS_SNIPPET.format(folder=path), path=path)


def _int8_section(entry: dict[str, Any], ort_file: str) -> str:
    """The README paragraph on model_int8.onnx: what it was quantised from, how, with which options."""
    block_size = entry["options"]["block_size"]
    method = BLOCKWISE_INT8_TEXT.format(block_size=block_size) if block_size else DYNAMIC_INT8_TEXT
    apart = " (fused again with the query/key/value projections apart)" if entry["options"]["attention_inputs"] else ""
    return INT8_SECTION.format(int8_file=INT8_FILE, ort_file=ort_file, source=entry["source"], apart=apart,
                               method=method, options=entry["options_text"])


def _openvino_int8_note(manifest: dict[str, Any]) -> str:
    """The README paragraphs on the OpenVINO int8 IRs the export carries (static, dynamic; empty without them)."""
    notes = ""
    entry = manifest.get("openvino_int8")
    if entry:
        source = f" from {entry['calibration_source']}" if entry.get("calibration_source") else ""
        notes += OPENVINO_INT8_NOTE.format(samples=entry["calibration_samples"], source=source,
                                           options=entry.get("options_text", "defaults"))
    dynamic = manifest.get("openvino_int8_dynamic")
    if dynamic:
        notes += OPENVINO_INT8_DYNAMIC_NOTE.format(**dynamic)
    return notes


_ENCODING_FIELD = {"input_ids": "ids", "attention_mask": "attention_mask", "token_type_ids": "type_ids"}
