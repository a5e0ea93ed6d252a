"""The ONNX export's query- and document-side tokenizer files: the prompt's ids in tokenizer.json's template give
exactly the tokens of prompt + text (as the folder's own tokenizer makes them) where the prompt tokenizes alone
(WordPiece, SentencePiece), and are refused with the reason where it does not (byte-level BPE before a space-led
word); the README and onnx_export.json say which."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tokenizers import Tokenizer
from transformers import AutoTokenizer

from hf_dumpembed.export.onnx import write_tokenizer_files
from hf_dumpembed.export.onnx_readme import _prompts_section
from hf_dumpembed.export.prompt_tokenizers import PROMPT_TOKENIZER_FILES, write_prompt_tokenizers
from hf_dumpembed.model.builder import BuildOptions, build

E5_PROMPTS = {"query": "query: ", "document": "passage: "}
LONG = "the quick brown fox jumps over the lazy dog and reads a file line by line " * 70
TEXTS = ["how do I read a file line by line?", "x", "", " Leading space, then Ünïcödé — 東京", "1990s: a decade", LONG]
# family -> its tokenizer (the zoo replicas: tests/support/zoo.py)
FAMILIES = {"e5-small-v2": "WordPiece", "multilingual-e5-small": "SentencePiece Unigram",
            "gte-modernbert-base": "byte-level BPE"}


@pytest.fixture(scope="module")
def tokenizer_folders(zoo_source, tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Path]]:
    """family -> (its K = 4 folder, a folder holding the ONNX export's tokenizer files of it)."""
    folders = {}
    for name in FAMILIES:
        root = tmp_path_factory.mktemp(f"prompt-tokenizers-{name}")
        built = build(zoo_source(name), root / "k4", BuildOptions(num_dump_tokens=4, match_steps=0))
        (root / "export").mkdir()
        write_tokenizer_files(built, root / "export")
        folders[name] = (built, root / "export")
    return folders


def assert_gives_prompt_plus_text(folder: Path, file: Path, prompt: str) -> None:
    """``file`` on TEXTS gives what the folder's own tokenizer (sentence-transformers') gives on prompt + text,
    padded and truncated alike."""
    reference = AutoTokenizer.from_pretrained(str(folder))([prompt + text for text in TEXTS], padding=True,
                                                          truncation=True)
    encodings = Tokenizer.from_file(str(file)).encode_batch(TEXTS)
    assert [e.ids for e in encodings] == reference["input_ids"], prompt
    assert [e.attention_mask for e in encodings] == reference["attention_mask"], prompt
    if "token_type_ids" in reference:
        assert [e.type_ids for e in encodings] == reference["token_type_ids"], prompt


@pytest.mark.parametrize("name", ["e5-small-v2", "multilingual-e5-small"])
def test_a_prompt_that_tokenizes_alone_is_put_in_the_template(tokenizer_folders, name: str) -> None:
    folder, export = tokenizer_folders[name]
    entries = write_prompt_tokenizers(export, E5_PROMPTS)
    for side, prompt in E5_PROMPTS.items():
        assert entries[side]["file"] == PROMPT_TOKENIZER_FILES[side] and entries[side]["reason"] is None
        assert_gives_prompt_plus_text(folder, export / PROMPT_TOKENIZER_FILES[side], prompt)


def test_byte_level_bpe_refuses_a_prompt_whose_space_joins_the_next_word(tokenizer_folders, caplog) -> None:
    folder, export = tokenizer_folders["gte-modernbert-base"]
    for file in PROMPT_TOKENIZER_FILES.values():
        (export / file).unlink(missing_ok=True)
    entries = write_prompt_tokenizers(export, E5_PROMPTS)
    for side in E5_PROMPTS:
        reason = entries[side]["reason"]
        assert entries[side]["file"] is None and not (export / PROMPT_TOKENIZER_FILES[side]).exists()
        assert "does not tokenize the same whatever text follows it" in reason and "Ġ" in reason, reason
        assert f"prepend the prompt string to each {side}" in reason
        assert PROMPT_TOKENIZER_FILES[side] in caplog.text  # said where the export runs, not only in the record
    # a prompt that ends where the pre-tokenizer always splits (a line break), and the empty prompt, are exact
    entries = write_prompt_tokenizers(export, {"query": "Represent this question for retrieval:\n", "document": ""})
    assert [entries[side]["file"] for side in E5_PROMPTS] == list(PROMPT_TOKENIZER_FILES.values())
    assert_gives_prompt_plus_text(folder, export / "tokenizer_query.json", "Represent this question for retrieval:\n")
    assert_gives_prompt_plus_text(folder, export / "tokenizer_document.json", "")


def test_a_tokenizer_without_a_template_is_refused(tokenizer_folders, tmp_path: Path) -> None:
    _, export = tokenizer_folders["e5-small-v2"]
    content = json.loads((export / "tokenizer.json").read_text())
    content["post_processor"] = None
    (tmp_path / "tokenizer.json").write_text(json.dumps(content))
    entries = write_prompt_tokenizers(tmp_path, E5_PROMPTS)
    assert entries["query"]["file"] is None and "no TemplateProcessing post-processor" in entries["query"]["reason"]


def test_the_readme_names_the_prompts_and_the_files_or_why_not() -> None:
    written = {"file": "tokenizer_query.json", "reason": None}
    refused = {"file": None, "reason": "the prompt 'passage: ' does not tokenize the same whatever text follows it"}
    section = _prompts_section({"prompts": E5_PROMPTS, "prompt_tokenizers": {"query": written, "document": refused}})
    assert "- query: 'query: '" in section and "- document: 'passage: '" in section
    assert "`tokenizer_query.json` (query) is" in section
    assert "No tokenizer file adds the prompt of:\n\n- document: the prompt 'passage: '" in section
    none = _prompts_section({"prompts": {"query": "", "document": ""}, "prompt_tokenizers": {}})
    assert "no prompts" in none


def test_every_export_names_the_query_and_document_prompts_of_old_and_new_folders(tmp_path: Path) -> None:
    """export_prompts: a folder built before config.json named its empty prompts ({}) exports both as empty strings;
    a bge-style `passage` prompt is named `document` as well (what encode_document applies); files that disagree
    are refused before any work, naming both."""
    from types import SimpleNamespace

    from hf_dumpembed.export.onnx import export_prompts

    def folder(config_prompts: dict, st_prompts: dict | None, default: str | None = None) -> tuple[Path, object]:
        (tmp_path / "config_sentence_transformers.json").write_text(json.dumps({"prompts": st_prompts}))
        return tmp_path, SimpleNamespace(prompts=config_prompts, default_prompt_name=default)

    assert export_prompts(*folder({}, {"query": "", "document": ""})) == {"query": "", "document": ""}
    assert export_prompts(*folder({}, {})) == {"query": "", "document": ""}
    bge = {"query": "Represent this sentence: ", "passage": ""}
    assert export_prompts(*folder(bge, bge)) == {**bge, "document": ""}
    tasks = {"web_search_query": "Instruct: search\nQuery: "}  # no query prompt: encode_query uses the default
    assert export_prompts(*folder(tasks, tasks, "web_search_query"))["query"] == "Instruct: search\nQuery: "
    with pytest.raises(ValueError, match="config_sentence_transformers.json has the prompts .* Make them equal"):
        export_prompts(*folder(E5_PROMPTS, {"query": "", "document": ""}))
