"""The ONNX export's README: every Python snippet runs as printed (only the folder's path filled in), prints its
result and gives the torch model's vectors (or `hf_dumpembed.quantize`'s codes); its tokenizer.json pads as well as
truncates, so a bare `tokenizers` load feeds the graph a rectangular batch."""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnxruntime", reason="pip install 'hf_dumpembed[onnx]'")

from sentence_transformers import SentenceTransformer  # noqa: E402

from hf_dumpembed.export.onnx import export_onnx  # noqa: E402
from hf_dumpembed.model.quantization import quantize  # noqa: E402
from hf_dumpembed.projections.fit import FitOptions, fit_projection  # noqa: E402
from tests.support.fit_fixtures import write_corpus  # noqa: E402

PLACEHOLDER = "path/to/this/folder"


@pytest.fixture(scope="module")
def exported(tiny_bert: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(fitted folder, its ONNX export with OpenVINO IR): the tiny K = 4 BERT fitted with a corpus at k = 8, so the
    export carries quantization.json."""
    from hf_dumpembed.model.builder import BuildOptions, build

    pytest.importorskip("openvino", reason="pip install 'hf_dumpembed[openvino]'")
    base = tmp_path_factory.mktemp("onnx-readme")
    built = build(tiny_bert, base / "k4", BuildOptions(num_dump_tokens=4, match_steps=0))
    fitted = fit_projection(built, base / "fitted", FitOptions(method="pca", dim=8, progress=False, plots=False),
                            corpus=write_corpus(base / "corpus.txt"))
    return fitted, export_onnx(fitted, base / "onnx", openvino=True).out_dir


def snippets(readme: str) -> dict[str, str]:
    """Each ```python block of the README under the heading it follows (a second block under one heading gets
    ' #2')."""
    found: dict[str, str] = {}
    heading = ""
    for part in re.split(r"(^## [^\n]*$|```python\n.*?```)", readme, flags=re.S | re.M):
        if part.startswith("## "):
            heading = part[3:].strip()
        elif part.startswith("```python"):
            name = heading if heading not in found else f"{heading} #2"
            found[name] = part.removeprefix("```python\n").removesuffix("```")
    return found


def run_snippet(code: str, folder: Path, namespace: dict | None = None) -> tuple[dict, str]:
    """Run ``code`` as printed, the README's placeholder path replaced by ``folder``; (namespace, stdout)."""
    namespace = {} if namespace is None else namespace
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code.replace(PLACEHOLDER, str(folder)), "README snippet", "exec"), namespace)
    return namespace, out.getvalue()


def test_the_tokenizer_file_pads_and_truncates(exported) -> None:
    from tokenizers import Tokenizer
    from transformers import AutoTokenizer

    _, onnx_dir = exported
    tokenizer = Tokenizer.from_file(str(onnx_dir / "tokenizer.json"))
    assert tokenizer.padding["length"] is None and tokenizer.padding["direction"] == "right"  # to the longest
    assert tokenizer.padding["pad_token"] == "[PAD]" and tokenizer.truncation is not None
    lengths = {len(e.ids) for e in tokenizer.encode_batch(["a", "a much longer text than the first one " * 3])}
    assert len(lengths) == 1  # one rectangular batch
    # transformers still pads only when asked (it resets the file's padding per call)
    auto = AutoTokenizer.from_pretrained(str(onnx_dir))
    assert len({len(ids) for ids in auto(["a", "a much longer text than the first one"])["input_ids"]}) == 2


def test_every_snippet_runs_as_printed_prints_and_gives_the_model_vectors(exported) -> None:
    fitted, onnx_dir = exported
    readme = (onnx_dir / "README.md").read_text()
    found = snippets(readme)
    assert {"onnxruntime", "OpenVINO", "fastembed (custom model)",
            "int8 and binary codes (`quantization.json`)"} <= set(found)
    assert "transformers" not in found["OpenVINO"] and "transformers" not in found["onnxruntime"]
    model = SentenceTransformer(str(fitted), trust_remote_code=True)
    for heading in ("onnxruntime", "OpenVINO"):
        namespace, printed = run_snippet(found[heading], onnx_dir)
        assert printed.strip(), f"the {heading} snippet prints nothing"
        np.testing.assert_allclose(namespace["embeddings"], model.encode(namespace["texts"]), atol=1e-4)
    # the quantization snippets, on the onnxruntime snippet's embeddings, give hf_dumpembed.quantize's codes
    for heading in ("int8 and binary codes (`quantization.json`)", "int8 and binary codes (`quantization.json`) #2"):
        namespace, _ = run_snippet(found["onnxruntime"], onnx_dir)
        run_snippet(found[heading], onnx_dir, namespace)
        np.testing.assert_array_equal(namespace["codes"], quantize(namespace["embeddings"], fitted, "int8"))
        if "bits" in namespace:
            np.testing.assert_array_equal(namespace["bits"], quantize(namespace["embeddings"], fitted, "ubinary"))
    assert json.loads((onnx_dir / "onnx_export.json").read_text())["quantization"]


def test_the_fastembed_snippet_runs_as_printed(exported) -> None:
    """fastembed cannot share this environment (it pins an older huggingface_hub): checked where it is installed,
    and by scripts/compat (see docs/environments.md)."""
    pytest.importorskip("fastembed", reason="fastembed lives in an environment of its own")
    fitted, onnx_dir = exported
    namespace, printed = run_snippet(snippets((onnx_dir / "README.md").read_text())["fastembed (custom model)"],
                                     onnx_dir)
    model = SentenceTransformer(str(fitted), trust_remote_code=True)
    np.testing.assert_allclose(np.stack(namespace["embeddings"]),
                               model.encode(["How do I read a file line by line in Python?"]), atol=1e-4)
    assert printed.strip()
