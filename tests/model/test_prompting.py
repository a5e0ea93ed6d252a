"""Zero-shot prompts stored at build time (`build --prompt`) equal those stored by a fit."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from hf_dumpembed.export.verify import check_load_paths, encode_with_automodel
from hf_dumpembed.model.builder import BuildOptions, build
from hf_dumpembed.projections.fit import FitOptions, fit_projection


@pytest.mark.parametrize("mode", ["prompteol", "echo"])
def test_build_with_a_prompt_stores_what_fit_stores(mode, tiny_llama: Path, tmp_path: Path) -> None:
    built = build(tiny_llama, tmp_path / "built", BuildOptions(num_dump_tokens=0, prompt=mode))
    plain = build(tiny_llama, tmp_path / "plain", BuildOptions(num_dump_tokens=0))
    fitted = fit_projection(plain, tmp_path / "fitted", FitOptions(method="embedfilter", ratio=1, prompt=mode,
                                                                   progress=False, plots=False))
    built_config = json.loads((built / "config.json").read_text())
    fitted_config = json.loads((fitted / "config.json").read_text())
    for key in ("prompt_mode", "prompt_token_ids", "pooling"):
        assert built_config[key] == fitted_config[key]
    assert not built_config["projection_info"]  # a prompt only: no projection
    texts = ["a man is eating food.", "the girl reads"]
    prompted, unprompted = encode_with_automodel(built, texts), encode_with_automodel(plain, texts)
    assert np.abs(prompted - unprompted).max() > 1e-3  # the prompt changes the vectors
    assert check_load_paths(built, texts, include_mteb=False).ok


def test_prompts_are_for_causal_lms_only(tiny_bert: Path, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="causal-LM prompting method"):
        build(tiny_bert, tmp_path / "bert", BuildOptions(num_dump_tokens=0, prompt="prompteol"))
    with pytest.raises(ValueError, match="prompt must be one of"):
        BuildOptions(prompt="summarize")
