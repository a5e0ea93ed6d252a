"""Training data layouts (jsonl, HF, BEIR + mining, RLHN, MLDR), malformed rows, and runs the data cannot make."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from hf_dumpembed.model.builder import BuildOptions, build
from hf_dumpembed.training.config import DataConfig, MiningConfig, config_from_dict
from hf_dumpembed.training.data import MalformedRow, load_rows, load_training_data, sha256_file
from hf_dumpembed.training.trainer import train
from tests.support.training_fixtures import (
    TEXTS,
    mldr_rows,
    rlhn_rows,
    run_config,
    toy_rows,
    write_beir_folder,
    write_jsonl,
)

torch.set_num_threads(1)


def test_jsonl_rows_with_default_and_mapped_columns(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "pairs.jsonl", toy_rows())
    rows, report = load_rows(DataConfig(path=str(path)))
    assert rows[0] == [toy_rows()[0]["query"], TEXTS[0], TEXTS[5]]
    assert report.num_rows == len(TEXTS) and report.sha256 == sha256_file(path) and report.name == "pairs"
    renamed = write_jsonl(tmp_path / "renamed.jsonl", [{"q": r["query"], "d": r["positive"], "hard": [r["negative"]]}
                                                       for r in toy_rows()])
    mapped, _ = load_rows(DataConfig(path=str(renamed), columns={"anchor": "q", "positive": "d", "negatives": "hard"}))
    assert mapped == rows
    pairs, _ = load_rows(DataConfig(path=str(path), num_negatives=0))
    assert pairs[0] == rows[0][:2]


def test_rlhn_and_mldr_layouts_jsonl_and_saved_hf_dataset(tmp_path: Path) -> None:
    import datasets

    rlhn = write_jsonl(tmp_path / "rlhn.jsonl", rlhn_rows())
    rows, _ = load_rows(DataConfig(path=str(rlhn), format="rlhn", num_negatives=2))
    assert rows[0] == [toy_rows()[0]["query"], f"Title {TEXTS[0]}", TEXTS[1], TEXTS[2]]
    mldr = write_jsonl(tmp_path / "mldr.jsonl", mldr_rows())
    mldr_out, _ = load_rows(DataConfig(path=str(mldr), format="mldr"))
    assert mldr_out[3] == [toy_rows()[3]["query"], TEXTS[3], toy_rows()[3]["negative"]]
    datasets.DatasetDict({"train": datasets.Dataset.from_list(rlhn_rows())}).save_to_disk(tmp_path / "rlhn-hf")
    hf_rows, report = load_rows(DataConfig(path=str(tmp_path / "rlhn-hf"), format="rlhn", num_negatives=2))
    assert hf_rows == rows and report.files and len(report.sha256) == 64
    with pytest.raises(ValueError, match=r"splits \['train'\]"):
        load_rows(DataConfig(path=str(tmp_path / "rlhn-hf"), format="rlhn", split="test"))
    with pytest.raises(MalformedRow, match=r"rlhn-hf row 0: 3 negative passage\(s\), but data.num_negatives=4"):
        load_rows(DataConfig(path=str(tmp_path / "rlhn-hf"), format="rlhn", num_negatives=4))


def test_beir_folder_gets_mined_hard_negatives_once(tiny_bert: Path, tmp_path: Path) -> None:
    folder = write_beir_folder(tmp_path / "beir")
    config = DataConfig(path=str(folder), split="train", mining=MiningConfig(range_max=10, relative_margin=None))
    rows, report = load_rows(config, mining_model=str(tiny_bert), cache_dir=tmp_path / "cache")
    assert report.format == "beir" and report.mining["model"] == str(tiny_bert) and len(rows) == len(TEXTS)
    pairs = {(r["query"], r["positive"]) for r in toy_rows()}
    for anchor, positive, negative in rows:
        assert (anchor, positive) in pairs and negative in TEXTS and negative != positive
    (cached,) = (tmp_path / "cache").iterdir()
    again, _ = load_rows(config, mining_model=str(tiny_bert), cache_dir=tmp_path / "cache")
    assert again == rows and list((tmp_path / "cache").iterdir()) == [cached]


@pytest.mark.parametrize("k", [0, 4])
def test_mining_reads_the_text_the_trained_model_reads(tiny_bert: Path, tmp_path: Path, monkeypatch, k: int) -> None:
    """A plain mining model reads ``text_length`` tokens; a DumpEmbed one reads its K [DUMP] tokens on top."""
    import sentence_transformers.util

    miner = tiny_bert if k == 0 else build(tiny_bert, tmp_path / "dump", BuildOptions(num_dump_tokens=k))
    seen: dict[str, int] = {}
    real = sentence_transformers.util.mine_hard_negatives

    def spy(dataset, model, **kwargs):
        seen["max_seq_length"] = model.max_seq_length
        return real(dataset, model, **kwargs)

    monkeypatch.setattr(sentence_transformers.util, "mine_hard_negatives", spy)
    config = DataConfig(path=str(write_beir_folder(tmp_path / "beir")), split="train",
                        mining=MiningConfig(range_max=10, relative_margin=None))
    _, report = load_rows(config, mining_model=str(miner), text_length=20, cache_dir=tmp_path / "cache")
    assert seen["max_seq_length"] == 20 + k and report.mining["text_length"] == 20


def test_a_run_mines_with_its_text_length_not_its_dump_tokens(tmp_path: Path) -> None:
    """K = 0 at 128 and K = 4 at 132 read the same text, so they mine with the same length (the same negatives)."""
    from hf_dumpembed.training.trainer import text_length

    for k, total in ((0, 128), (4, 132)):
        folder = tmp_path / f"k{k}"
        folder.mkdir()
        (folder / "config.json").write_text(json.dumps({"model_type": "dumpembed", "num_dump_tokens": k}))
        raw = run_config(tmp_path, tmp_path / "rows.jsonl", tmp_path / "out")
        raw["model"] |= {"num_dump_tokens": k, "max_seq_length": total}
        assert text_length(folder, config_from_dict(raw)) == 128
    raw["model"].pop("max_seq_length")
    assert text_length(folder, config_from_dict(raw)) is None


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", r"bad.jsonl:3: not valid JSON"),
        ('["a", "b"]', r"bad.jsonl:3: expected a JSON object, got list"),
        ('{"query": "q", "negative": "n"}', r"bad.jsonl:3: no positive column; expected one of \['positive', 'pos'\]"),
        ('{"query": "", "positive": "p", "negative": "n"}', r"bad.jsonl:3: the anchor must be a non-empty string"),
        ('{"query": "q", "positive": "p"}', r"bad.jsonl:3: no negatives column"),
        ('{"query": "q", "positive": "p", "negatives": []}', r"bad.jsonl:3: 0 hard negative\(s\), but"),
    ],
)
def test_malformed_rows_name_file_and_line(tmp_path: Path, line: str, message: str) -> None:
    good = [json.dumps(r) for r in toy_rows()[:2]]
    path = write_jsonl(tmp_path / "bad.jsonl", [*good, line, *good])
    with pytest.raises(MalformedRow, match=message):
        load_rows(DataConfig(path=str(path)))


def test_lenient_counts_and_reports_malformed_rows(tmp_path: Path) -> None:
    lines = [json.dumps(r) for r in toy_rows()]
    lines[4], lines[9] = "{oops", '{"query": "q"}'
    path = write_jsonl(tmp_path / "some-bad.jsonl", lines)
    rows, report = load_rows(DataConfig(path=str(path), lenient=True))
    assert len(rows) == len(TEXTS) - 2 and report.skipped_rows == 2
    assert report.skipped_examples[0].startswith(f"{path}:5:") and report.skipped_examples[1].startswith(f"{path}:10:")


def test_empty_data_and_subsets(tmp_path: Path) -> None:
    empty = write_jsonl(tmp_path / "empty.jsonl", [])
    with pytest.raises(ValueError, match="holds no usable training rows"):
        load_rows(DataConfig(path=str(empty)))
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_rows(DataConfig(path=str(tmp_path / "missing.jsonl")))
    path = write_jsonl(tmp_path / "toy.jsonl", toy_rows())
    first, _ = load_rows(DataConfig(path=str(path), max_rows=5))
    second, _ = load_rows(DataConfig(path=str(path), max_rows=5))
    assert len(first) == 5 and first == second
    with pytest.raises(ValueError, match="same num_negatives"):
        load_training_data((DataConfig(path=str(path)), DataConfig(path=str(path), num_negatives=0)))
    dataset, reports = load_training_data((DataConfig(path=str(path)), DataConfig(path=str(path), max_rows=3)))
    assert dataset.column_names == ["anchor", "positive", "negative_1"] and len(dataset) == len(TEXTS) + 3


def test_training_refuses_impossible_runs(tiny_bert: Path, tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "toy.jsonl", toy_rows())
    with pytest.raises(ValueError, match=r"global batch \(32 per device x 1 device\(s\) = 32\) is larger than the "
                                         r"dataset \(15 rows\)"):
        train(config_from_dict(run_config(tiny_bert, data, tmp_path / "a", batch_size=32)))
    with pytest.raises(ValueError, match="is not a DumpEmbed model folder"):
        raw = run_config(tiny_bert, data, tmp_path / "b")
        raw["model"] = {"init_from": str(tiny_bert)}
        train(config_from_dict(raw))
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_backbone_whose_tokenizer_cannot_take_the_prefix(tmp_path: Path) -> None:
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import BertConfig, BertModel, PreTrainedTokenizerFast

    # A word-level vocabulary (SentencePiece tokenizers, refused here until 2026-12-01, now take the prefix)
    backend = Tokenizer(models.WordLevel({"[UNK]": 0, "[PAD]": 1, "hello": 2, "world": 3}, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="[UNK]", pad_token="[PAD]")
    BertModel(BertConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                         intermediate_size=32)).save_pretrained(tmp_path / "sp")
    tokenizer.save_pretrained(tmp_path / "sp")
    data = write_jsonl(tmp_path / "toy.jsonl", toy_rows())
    with pytest.raises(ValueError, match="Tokenizer type not supported: model 'WordLevel'"):
        train(config_from_dict(run_config(tmp_path / "sp", data, tmp_path / "out")))


# Boundary checks: a bad parameter is refused with a message that names it.


def test_non_utf8_training_data_names_file_and_line(tmp_path):
    from hf_dumpembed.training.data import _jsonl_objects

    data = tmp_path / "train.jsonl"
    data.write_bytes(b'{"anchor": "a", "positive": "b"}\n{"anchor": "\xc3(", "positive": "b"}\n')
    with pytest.raises(ValueError, match="train.jsonl:2: not UTF-8"):
        list(_jsonl_objects(data))
