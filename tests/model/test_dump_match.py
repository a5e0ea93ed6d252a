"""The "match" step: only the K [DUMP] rows are fitted, and they bring the K > 0 model's text-token states closer to
the K = 0 source's."""

from __future__ import annotations

import pytest
import torch

from hf_dumpembed.model.builder import BuildOptions, build_dump_model, load_backbone
from hf_dumpembed.model.dump_match import dump_slots, match_dump_rows, text_states_without_dump

TEXTS = [f"text number {i} about {word} and files" for i, word in enumerate(
    "reading writing parsing sorting hashing joining splitting opening closing copying moving listing "
    "zipping caching logging timing".split())]


def _state_error(model, tokenizer, source, source_tokenizer) -> float:
    with torch.no_grad():
        plain = source_tokenizer(TEXTS, padding=True, return_tensors="pt")
        prefixed = tokenizer(TEXTS, padding=True, return_tensors="pt")
        target = source(**plain).last_hidden_state
        states = text_states_without_dump(model.backbone(**prefixed).last_hidden_state,
                                          dump_slots(model, prefixed["attention_mask"]))
        mask = plain["attention_mask"][..., None]
        return float((((states - target) ** 2) * mask).sum() / mask.sum())


@pytest.mark.parametrize("fixture", ["tiny_bert", "tiny_llama"])
def test_match_moves_only_the_dump_rows_and_lowers_the_state_error(fixture, request):
    backbone = request.getfixturevalue(fixture)
    model, tokenizer = build_dump_model(backbone, BuildOptions(num_dump_tokens=3, init="mean", match_steps=0))
    inner = model.backbone
    source, source_tokenizer = load_backbone(backbone)
    source_tokenizer.pad_token = source_tokenizer.pad_token or source_tokenizer.eos_token
    source_tokenizer.padding_side = tokenizer.padding_side
    dump_ids = list(model.config.dump_token_ids)
    before = {name: p.detach().clone() for name, p in inner.named_parameters()}
    error_before = _state_error(model, tokenizer, source, source_tokenizer)
    result = match_dump_rows(model, tokenizer, source, source_tokenizer, TEXTS, steps=30,
                             learning_rate=5e-2, batch_size=8)
    error_after = _state_error(model, tokenizer, source, source_tokenizer)
    assert error_after < error_before - 1e-3  # tiny random BERT: most of the error is the position shift
    assert result.steps == 30 and 0 < result.last_loss < float("inf")  # one batch each: compare on TEXTS above
    weight_name = next(n for n, p in inner.named_parameters() if p is inner.get_input_embeddings().weight)
    for name, param in inner.named_parameters():
        if name == weight_name:
            changed = (param != before[name]).any(dim=1)
            assert changed[dump_ids].all() and changed.sum() == len(dump_ids)
        else:
            assert torch.equal(param, before[name]), name
        assert param.requires_grad  # left trainable as found


@pytest.mark.parametrize("fixture", ["tiny_bert", "tiny_llama"])
def test_dump_slots_follow_the_model_position_rule_under_both_paddings(fixture, request):
    """The slots the match replaces and removes are the model's own [DUMP] positions, whichever side pads."""
    model, tokenizer = build_dump_model(request.getfixturevalue(fixture), BuildOptions(num_dump_tokens=2,
                                                                                         match_steps=0))
    for side in ("left", "right"):
        tokenizer.padding_side = side
        batch = tokenizer(["one", "a much longer text with several words"], padding=True, return_tensors="pt")
        slots = dump_slots(model, batch["attention_mask"])
        is_dump = torch.isin(batch["input_ids"], torch.tensor(model.config.dump_token_ids))
        assert torch.equal(slots, is_dump) and slots.sum(dim=1).tolist() == [2, 2]
        states = torch.arange(batch["input_ids"].numel(), dtype=torch.float32).view(*batch["input_ids"].shape, 1)
        kept = text_states_without_dump(states, slots).squeeze(-1)
        assert kept.shape == (2, batch["input_ids"].shape[1] - 2)
        assert torch.equal(kept, states.squeeze(-1)[~slots].view(2, -1))


def test_build_with_match_steps_records_it_and_rejects_bad_input(tiny_bert, tiny_llama):
    model, _ = build_dump_model(tiny_bert, BuildOptions(num_dump_tokens=2, init="sep", match_steps=2,
                                                        match_texts=tuple(TEXTS)))
    assert model.config.dump_init == "sep+match2"
    default, _ = build_dump_model(tiny_bert, BuildOptions(num_dump_tokens=2, match_texts=tuple(TEXTS)))
    assert default.config.dump_init == "sep+match60"  # the default for encoders with K > 0
    decoder, _ = build_dump_model(tiny_llama, BuildOptions(num_dump_tokens=2))
    assert decoder.config.dump_init == "normal"  # decoders: no match by default
    with pytest.raises(ValueError, match="at least 16 non-empty texts"):
        build_dump_model(tiny_bert, BuildOptions(num_dump_tokens=2, match_steps=2, match_texts=("a", "b")))
    with pytest.raises(ValueError, match="match_steps must be a non-negative integer"):
        BuildOptions(match_steps=-1)
    unchanged, _ = build_dump_model(tiny_bert, BuildOptions(num_dump_tokens=0, match_steps=2,
                                                            match_texts=tuple(TEXTS)))
    assert unchanged.config.dump_init == "sep"  # K = 0: nothing to match


def test_training_config_match_steps_reaches_the_build(tiny_bert, tmp_path, monkeypatch):
    from hf_dumpembed.model import builder
    from hf_dumpembed.training import trainer
    from hf_dumpembed.training.config import config_from_dict

    seen = {}
    monkeypatch.setattr(trainer, "build", lambda backbone, folder, options, overwrite: seen.setdefault("o", options))
    config = config_from_dict({"model": {"backbone": str(tiny_bert), "num_dump_tokens": 2, "match_steps": 7},
                               "data": {"path": str(tmp_path / "pairs.jsonl")}, "output": str(tmp_path / "out")})
    trainer.prepare_initial_model(config)
    assert seen["o"].match_steps == 7 and isinstance(seen["o"], builder.BuildOptions)


def test_matching_twice_gives_bit_identical_rows_on_two_threads() -> None:
    """Two [DUMP]-row matches of the embedded all-MiniLM-L6-v2, on one and on two CPU threads, give bit-identical
    rows."""
    import copy

    from hf_dumpembed.data.assets import default_encoder_path
    from hf_dumpembed.data.corpora.stdlib_code import train_split_texts

    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        path = default_encoder_path()
        model, tokenizer = build_dump_model(path, BuildOptions(num_dump_tokens=4, match_steps=0))
        source, source_tokenizer = load_backbone(path)
        source_tokenizer.padding_side = tokenizer.padding_side
        texts = train_split_texts()[:400]
        rows = []
        for _ in range(2):
            copied = copy.deepcopy(model)
            match_dump_rows(copied, tokenizer, source, source_tokenizer, texts, steps=2, seed=0)
            rows.append(copied.backbone.get_input_embeddings().weight[list(copied.config.dump_token_ids)].detach())
    finally:
        torch.set_num_threads(threads)
    assert torch.equal(rows[0], rows[1])
