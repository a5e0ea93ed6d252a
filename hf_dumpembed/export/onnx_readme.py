"""README.md of an ONNX export folder: what the graph computes and how to run it (onnxruntime, fastembed, OpenVINO)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from .artefacts import INT8_FILE, ONNX_FILE, OPTIMIZED_FILE

TEMPLATE_FILE = Path(__file__).resolve().parent.parent / "model_cards" / "onnx_export.md"


def _sections(text: str) -> dict[str, str]:
    """The template's sections by name: each from its ``<!-- section NAME -->`` line to one newline before the next."""
    parts = re.split(r"^<!-- section (\w+) -->\n", text, flags=re.MULTILINE)
    return {name: body.removesuffix("\n") for name, body in zip(parts[1::2], parts[2::2], strict=True)}


SECTIONS = _sections(TEMPLATE_FILE.read_text(encoding="utf-8"))


def render_readme(model_dir: Path, manifest: dict[str, Any], folder: Path, model_id: str | None = None) -> str:
    """The README for the export in ``folder`` (``manifest`` as written to onnx_export.json)."""
    from tokenizers import Tokenizer

    tokenizer_config = json.loads((folder / "tokenizer_config.json").read_text())
    pad_token = tokenizer_config.get("pad_token") or "[PAD]"
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    pad_id = tokenizer.token_to_id(pad_token) or 0
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
    pads = tokenizer.padding is not None
    padding_line = "" if pads else f'\ntokenizer.enable_padding(pad_id={pad_id}, pad_token="{pad_token}")'
    tokenizer_comment = f"# tokenizer.json {'pads each batch to its longest text, ' if pads else ''}truncates at " \
                        f"{max_length} tokens"
    return SECTIONS["readme"].format(
        name=model_dir.name, pooling=manifest["pooling"],
        normalized="L2 normalisation" if manifest["normalized"] else "no normalisation",
        dimension=manifest["dimension"], inputs=", ".join(f"`{name}`" for name in inputs),
        num_dump=manifest["num_dump_tokens"], files=", ".join(f"`{f}`" for f in files + ["README.md"]),
        parity_rows=rows, path=path, pad_id=pad_id, pad_token=pad_token,
        ort_file=ort_file, padding_line=padding_line, tokenizer_comment=tokenizer_comment,
        feed=feed, model_id=model_id or f"local/{model_dir.name}-onnx", torch=manifest["torch"],
        opset=manifest["opset"],
        fused_section=SECTIONS["fused_section"] if fused else "",
        int8_section=_int8_section(manifest["onnxruntime_int8"], ort_file) if int8 else "",
        openvino_section=SECTIONS["openvino_section"].format(
            path=path, precision=openvino, feed=feed, padding_line=padding_line,
            bf16_note=SECTIONS["bf16_note"] if openvino == "bf16" else "", int8_note=_openvino_int8_note(manifest)
        ) if openvino else "",
        quantization_section=_quantization_section(folder, path),
        prompts_section=_prompts_section(manifest),
    )


def _prompts_section(manifest: dict[str, Any]) -> str:
    """Which prompt to prepend to which text, and the prompt-side tokenizer files that add it (onnx_export.json's
    ``prompts`` and ``prompt_tokenizers``)."""
    prompts = manifest["prompts"]
    if not any(prompts.values()):
        return SECTIONS["no_prompts_section"]
    ordered = sorted(prompts.items(), key=lambda item: (item[0] != "query", item[0] != "document"))
    listed = "\n".join(f"- {name}: {text!r}" for name, text in ordered)
    entries = manifest.get("prompt_tokenizers") or {}
    written = {side: entry["file"] for side, entry in entries.items() if entry.get("file") and prompts.get(side)}
    refused = "\n".join(f"- {side}: {entry['reason']}." for side, entry in entries.items() if not entry.get("file"))
    files = ""
    if written:
        names = " and ".join(f"`{file}` ({side})" for side, file in written.items())
        files = SECTIONS["prompt_files_text"].format(written=names + (" is" if len(written) == 1 else " are"))
    if refused:
        files += SECTIONS["refused_files_text"].format(refused=refused)
    example = prompts.get("query") or next(text for text in prompts.values() if text)
    return SECTIONS["prompts_section"].format(listed=listed, example=example, files=files)


def _quantization_section(folder: Path, path: str) -> str:
    """How to turn the graph's vectors into the stored int8 / binary codes, when the export carries the folder's
    quantization.json (empty otherwise)."""
    from ..model.quantization import CALIBRATION_FILE, NUMPY_SNIPPET, SENTENCE_TRANSFORMERS_SNIPPET, read_calibration

    if not (folder / CALIBRATION_FILE).is_file():
        return ""
    texts = read_calibration(folder).info.get("num_texts")
    measured = f"{texts} texts of the fit corpus" if texts else "the fit corpus"
    return SECTIONS["quantization_section"].format(
        measured=measured, numpy_snippet=NUMPY_SNIPPET.format(folder=path),
        st_snippet=SENTENCE_TRANSFORMERS_SNIPPET.format(folder=path), path=path)


def _int8_section(entry: dict[str, Any], ort_file: str) -> str:
    """The README paragraph on model_int8.onnx: what it was quantised from, how, with which options."""
    block_size = entry["options"]["block_size"]
    method = SECTIONS["blockwise_int8_text" if block_size else "dynamic_int8_text"].format(block_size=block_size)
    apart = " (fused again with the query/key/value projections apart)" if entry["options"]["attention_inputs"] else ""
    return SECTIONS["int8_section"].format(int8_file=INT8_FILE, ort_file=ort_file, source=entry["source"],
                                           apart=apart, method=method, options=entry["options_text"])


def _openvino_int8_note(manifest: dict[str, Any]) -> str:
    """The README paragraphs on the OpenVINO int8 IRs the export carries (static, dynamic; empty without them)."""
    notes = ""
    entry = manifest.get("openvino_int8")
    if entry:
        source = f" from {entry['calibration_source']}" if entry.get("calibration_source") else ""
        notes += SECTIONS["openvino_int8_note"].format(samples=entry["calibration_samples"], source=source,
                                                       options=entry.get("options_text", "defaults"))
    dynamic = manifest.get("openvino_int8_dynamic")
    if dynamic:
        notes += SECTIONS["openvino_int8_dynamic_note"].format(**dynamic)
    return notes


_ENCODING_FIELD = {"input_ids": "ids", "attention_mask": "attention_mask", "token_type_ids": "type_ids"}
