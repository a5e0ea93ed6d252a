"""One length everywhere: every file of a folder that states a length agrees with its max_seq_length, so runtimes that
read only tokenizer.json (a bare `tokenizers` load feeding onnxruntime) or follow the folder README's snippets
truncate where sentence-transformers does, on texts far over the limit.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from sentence_transformers import SentenceTransformer

from hf_dumpembed.export.onnx import export_onnx
from hf_dumpembed.model.builder import BuildOptions, build

MAX_SEQ_LENGTH = 24
LONG = ["the quick brown fox jumps over the lazy dog " * 40, "a man is eating food " * 60, "hello world"]


@pytest.fixture(scope="module")
def folders(tiny_bert: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("one-length")
    source_config = json.loads((tiny_bert / "tokenizer_config.json").read_text())
    assert source_config.get("max_length") != MAX_SEQ_LENGTH
    folder = build(tiny_bert, root / "k4", BuildOptions(num_dump_tokens=4, match_steps=0,
                                                        max_seq_length=MAX_SEQ_LENGTH))
    return folder, export_onnx(folder, root / "onnx", openvino=True).out_dir


def test_every_file_states_the_same_length(folders):
    for folder in folders:
        tokenizer_json = json.loads((folder / "tokenizer.json").read_text())
        config = json.loads((folder / "tokenizer_config.json").read_text())
        assert tokenizer_json["truncation"]["max_length"] == MAX_SEQ_LENGTH, folder
        # the folder's file does not pad (transformers pads per call); the ONNX export's pads to the longest text, so
        # a bare `tokenizers` load gives the graph a rectangular batch
        padding = tokenizer_json["padding"]
        assert padding is None if folder == folders[0] else padding["strategy"] == "BatchLongest", folder
        assert config["model_max_length"] == config["max_length"] == MAX_SEQ_LENGTH, folder
    assert SentenceTransformer(str(folders[0]), trust_remote_code=True).max_seq_length == MAX_SEQ_LENGTH


def test_bare_tokenizers_and_onnxruntime_truncate_where_sentence_transformers_does(folders):
    import onnxruntime
    from tokenizers import Tokenizer

    folder, onnx_dir = folders
    expected = SentenceTransformer(str(folder), trust_remote_code=True).encode(LONG)
    tokenizer = Tokenizer.from_file(str(onnx_dir / "tokenizer.json"))  # no enable_truncation: the file's own
    tokenizer.enable_padding(pad_id=tokenizer.token_to_id("[PAD]"), pad_token="[PAD]")
    encodings = tokenizer.encode_batch(LONG)
    assert max(len(e.ids) for e in encodings) == MAX_SEQ_LENGTH
    session = onnxruntime.InferenceSession(str(onnx_dir / "model.onnx"), providers=["CPUExecutionProvider"])
    feed = {"input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
            "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
            "token_type_ids": np.array([e.type_ids for e in encodings], dtype=np.int64)}
    vectors = session.run(["sentence_embedding"], {i.name: feed[i.name] for i in session.get_inputs()})[0]
    np.testing.assert_allclose(vectors, expected, atol=1e-5)


def _snippet(readme: str, heading: str) -> str:
    section = readme[readme.index(heading):]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


@pytest.mark.parametrize("heading", ["## onnxruntime", "## OpenVINO"])
def test_the_folder_readme_snippets_truncate_where_sentence_transformers_does(folders, heading):
    folder, onnx_dir = folders
    expected = SentenceTransformer(str(folder), trust_remote_code=True).encode(LONG[:1])
    code = _snippet((onnx_dir / "README.md").read_text(), heading)
    code = code.replace('["How do I read a file line by line in Python?", "Open the file and iterate over it."]',
                        repr(LONG[:1]))
    code = code.replace('["How do I read a file line by line in Python?"]', repr(LONG[:1]))
    assert repr(LONG[:1]) in code, "the snippet's example texts changed: update this test"
    code = code.replace("path/to/this/folder", str(onnx_dir))  # the README names the folder generically
    namespace: dict = {}
    exec(compile(code.replace("print(", "(lambda *a: None)("), f"README {heading}", "exec"), namespace)
    np.testing.assert_allclose(np.asarray(namespace["embeddings"]), expected, atol=1e-4)
