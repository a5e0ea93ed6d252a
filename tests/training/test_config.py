"""The run config: every key checked (unknown keys, types, ranges and cross-field rules name the key and the value),
overrides of dotted keys, YAML errors."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from hf_dumpembed.training.config import ConfigError, config_from_dict, load_config

BASE = {"model": {"backbone": "some/backbone"}, "data": {"path": "x.jsonl"}, "output": "out"}


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        ({"trainig": {}}, r"unknown key\(s\) \['trainig'\]; allowed keys: \["),
        ({"model": {"backbone": "a/b", "k": 4}}, r"model: unknown key\(s\) \['k'\]"),
        ({"training": {"batch_size": "32"}}, r"training.batch_size: Input should be a valid integer; got '32'"),
        ({"training": {"loss": "triplet"}}, r"training.loss: Input should be 'cached_mnrl' or 'mnrl'; got 'triplet'"),
        ({"training": {"batch_size": 8, "mini_batch_size": 16}}, r"mini_batch_size=16 is larger than"),
        ({"training": {"warmup_ratio": 1.5}}, r"warmup_ratio must be in \[0, 1\)"),
        ({"training": {"learning_rate": 0}}, r"training.learning_rate must be > 0"),
        ({"output": None}, r"output: Input should be a valid string; got None"),
        ({"model": {"backbone": "a/b", "init_from": "c"}}, r"set exactly one of model.backbone"),
        ({"model": {"backbone": "a/b", "num_dump_tokens": -1}}, r"num_dump_tokens must be >= 0"),
        ({"data": []}, r"list at least one training data source"),
        ({"data": {"path": "x", "format": "csv"}},
         r"data\[0\].format: Input should be 'auto', 'jsonl', .* or 'mldr'; got 'csv'"),
        ({"data": {"path": "x", "columns": {"query": "q"}}}, r"unknown role\(s\) \['query'\]"),
        ({"seed": 1.5}, r"seed: Input should be a valid integer; got 1.5"),
        ({"training": {"warmup_ratio": -0.5}}, r"training.warmup_ratio must be in \[0, 1\); got -0.5"),
        ({"training": {"dump_learning_rate": -1.0}}, r"training.dump_learning_rate must be >= 0; got -1.0"),
        ({"training": {"save_total_limit": 0}}, r"training.save_total_limit must be > 0; got 0"),
        ({"data": {"path": "x", "max_rows": 0}}, r"data\[0\].max_rows must be > 0; got 0"),
        ({"data": {"path": "x", "mining": {"batch_size": 0}}}, r"data\[0\].mining.batch_size must be > 0; got 0"),
        ({"data": {"path": "x", "columns": {"anchor": 5}}},
         r"data\[0\].columns.anchor: Input should be a valid string; got 5"),
        ({"data": {}}, r"data\[0\].path: Field required"),
    ],
)
def test_bad_configs_say_what_is_wrong(patch: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        config_from_dict({**BASE, **patch})


def test_config_file_errors_and_overrides(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        load_config(tmp_path / "nope.yaml")
    (tmp_path / "bad.yaml").write_text("model: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(tmp_path / "bad.yaml")
    (tmp_path / "run.yaml").write_text(yaml.safe_dump(BASE))
    config = load_config(tmp_path / "run.yaml", {"seed": 3, "training.batch_size": 16})
    assert config.seed == 3 and config.training.batch_size == 16 and config.training.mini_batch_size == 16
    assert load_config(tmp_path / "run.yaml").training.mini_batch_size == 32
    assert config.checkpoint_dir == str(Path("out.checkpoints").resolve()) and config.model.backbone == "some/backbone"


def test_paths_are_taken_as_given_and_the_callers_mapping_is_left_alone(tmp_path: Path) -> None:
    """Path objects (what `build` returns) are read as strings; the mapping passed in is not modified."""
    raw = {"model": {"init_from": tmp_path / "built"}, "data": {"path": tmp_path / "train"}, "output": "out"}
    config = config_from_dict(raw)
    assert (config.model.init_from, config.data[0].path) == (str(tmp_path / "built"), str(tmp_path / "train"))
    assert isinstance(raw["model"]["init_from"], Path), "the caller's mapping was modified"
    with pytest.raises(ConfigError, match="model.init_from: Input should be a valid string; got 3"):
        config_from_dict({**raw, "model": {"init_from": 3}})
