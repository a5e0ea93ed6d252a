"""The quickstart pipeline end to end on tiny models and tiny collections: steps, table, results, resume."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from hf_dumpembed.data.beir import write_beir
from hf_dumpembed.data.corpora.manifest import write_manifest
from hf_dumpembed.quickstart import Budget, QuickstartOptions, run_quickstart
from hf_dumpembed.quickstart.data import prepare_collections
from hf_dumpembed.quickstart.steps import StepRunner
from tests.support.fit_fixtures import corpus_texts
from tests.support.tiny_models import as_sentence_transformers_folder

TINY_BUDGET = Budget(
    name="tiny", train_rows=24, batch_size=8, mini_batch_size=4, num_negatives=0, steps=6, max_seq_length=24,
    fit_max_texts=None, projection_dim=8, eval_max_queries=None, eval_max_documents=None, speed_texts=8,
    speed_repeats=1, decoder_max_queries=6, decoder_max_documents=12, decoder_max_seq_length=32, decoder_speed_texts=4,
)


def write_collection(data_dir: Path, name: str, split: str, offset: int, size: int, follow: bool = False) -> Path:
    """Pairs (first three words -> the whole sentence) of the fixture sentences, with a manifest as built ones have.
    ``follow``: each document is its sentence and the next one (SpecTemp auto mode's pseudo-queries, fitted on the
    training collection, are a text's first sentence against the whole text)."""
    sentences = corpus_texts()
    texts = [sentences[i] + (f" {sentences[(i + 7) % len(sentences)]}" if follow else "")
             for i in range(offset, offset + size)]
    folder = data_dir / name
    write_beir(folder, {f"d{i}": {"title": "", "text": t} for i, t in enumerate(texts)},
               {f"q{i}": " ".join(t.split()[:3]) for i, t in enumerate(texts)},
               {f"q{i}": {f"d{i}": 1} for i in range(len(texts))}, split=split)
    write_manifest(name, folder, split, {"documents": size, "queries": size, "judgements": size},
                   {"use": "test fixture"})
    return folder


@pytest.fixture(scope="module")
def tiny_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data = tmp_path_factory.mktemp("quickstart-data")
    write_collection(data, "StdlibCodeTrain", "train", 0, 48, follow=True)
    write_collection(data, "StdlibCode", "test", 60, 30)
    write_collection(data, "PyFAQ", "test", 100, 20)
    return data


@pytest.fixture(scope="module")
def measured_speeds() -> list[dict[str, float]]:
    """What `measure_speed` returned during the first run (one dict per call), recorded by a wrapper."""
    return []


@pytest.fixture(scope="module")
def tiny_run(tiny_bert: Path, tiny_llama: Path, tiny_data: Path, measured_speeds,
             tmp_path_factory: pytest.TempPathFactory):
    out = tmp_path_factory.mktemp("quickstart") / "run"
    # like all-MiniLM-L6-v2: a sentence-transformers folder with mean pooling (the [DUMP] model's pooling follows it)
    encoder = as_sentence_transformers_folder(tiny_bert, out.parent / "tiny-st-encoder")
    options = QuickstartOptions(output_dir=out, data_dir=tiny_data, encoder=str(encoder), decoder=True,
                                decoder_backbone=str(tiny_llama), budget=TINY_BUDGET,
                                eval_tasks=("PyFAQ", "StdlibCode"), repo_id="test-org/tiny-quickstart", progress=False)
    import hf_dumpembed.quickstart.pipeline as pipeline

    measure = pipeline.measure_speed

    def recording(*args, **kwargs):
        measured_speeds.append(measure(*args, **kwargs))
        return measured_speeds[-1]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pipeline, "measure_speed", recording)
        return options, run_quickstart(options)


def hand_ndcg_at_10(folder: Path, collection: Path) -> float:
    """nDCG@10 by hand: the folder's own sentence-transformers vectors (encode_query / encode_document, as mteb
    calls them), cosine ranking in numpy, DCG = Σ rel / log2(rank + 1) over the top 10, divided by the ideal DCG."""
    from sentence_transformers import SentenceTransformer

    from hf_dumpembed.data.beir import load_beir

    data = load_beir(collection, "test")
    model = SentenceTransformer(str(folder), trust_remote_code=True)
    query_ids, document_ids = list(data.queries), list(data.corpus)
    queries = model.encode_query([data.queries[q] for q in query_ids])
    documents = model.encode_document([data.document_text(d) for d in document_ids])
    similarity = (queries / np.linalg.norm(queries, axis=1, keepdims=True)) @ (
        documents / np.linalg.norm(documents, axis=1, keepdims=True)).T
    values = []
    for row, query in enumerate(query_ids):
        relevance = data.qrels[query]
        top = np.argsort(-similarity[row], kind="stable")[:10]
        dcg = sum(relevance.get(document_ids[i], 0) / np.log2(rank + 2) for rank, i in enumerate(top))
        ideal = sorted(relevance.values(), reverse=True)[:10]
        values.append(dcg / sum(rel / np.log2(rank + 2) for rank, rel in enumerate(ideal)))
    return float(np.mean(values))


def test_every_step_runs_and_writes_its_outputs(tiny_run):
    options, run = tiny_run
    out = options.output_dir
    assert [r.row.name for r in run.results] == ["k0", "k4", "spectemp", "spectemp-reference", "pca"]
    assert [r.dim for r in run.results] == [32, 32, 8, 8, 8]
    for result in run.results:
        assert set(result.scores) == {"PyFAQ", "StdlibCode"}
    for result in run.decoder_results:  # the decoder runs on samples: 6 queries, 12 documents
        assert set(result.scores) == {"PyFAQ-6q12d", "StdlibCode-6q12d"}
    for result in run.results + run.decoder_results:
        assert result.texts_per_second and result.texts_per_second > 0
    assert [r.row.name for r in run.decoder_results] == ["decoder", "embedfilter"]
    assert run.decoder_results[1].dim == 16  # EmbedFilter τ=2 keeps the middle half of 32 dimensions
    assert run.parity["spectemp"].ok
    for k in (0, 4):
        info = json.loads((out / f"minilm-k{k}" / "config.json").read_text())["training_info"]
        assert info["steps"] == 6 and info["datasets"][0]["name"] == "StdlibCodeTrain"
    spectemp = json.loads((run.folders["spectemp"] / "config.json").read_text())["projection_info"]
    reference = json.loads((run.folders["spectemp-reference"] / "config.json").read_text())["projection_info"]
    pca = json.loads((run.folders["pca"] / "config.json").read_text())["projection_info"]
    assert (spectemp["method"], pca["method"], spectemp["dim"]) == ("spectemp", "pca", 8)
    assert (spectemp["params"]["mode"], reference["params"]["mode"], reference["dim"]) == ("auto", "reference", 8)
    # one encoding pass, one corpus
    assert spectemp["corpus"]["sha256"] == reference["corpus"]["sha256"] == pca["corpus"]["sha256"]
    assert (out / "plots" / "ndcg.png").stat().st_size > 0
    assert (out / "plots" / "training_loss.png").stat().st_size > 0
    assert (out / "push-staging" / "model.safetensors").exists()
    card = (run.folders["spectemp"] / "README.md").read_text()
    assert "test-org/tiny-quickstart" in card and "StdlibCode" in card and "SpecTemp" in card


def test_the_table_shows_spectemp_auto_and_the_paper_rule_at_the_same_k(tiny_run):
    """`fit`'s default (auto mode) is the headline SpecTemp folder, and the paper's rule is fitted beside it at the same
    k from the same encoding pass; the table, the summary and the card name which mode each row ran."""
    from hf_dumpembed.quickstart.summary import results_table

    options, run = tiny_run
    by_name = {r.row.name: r for r in run.results}
    assert by_name["spectemp"].row.label == "[DUMP] + SpecTemp auto k=8"
    assert by_name["spectemp-reference"].row.label == "[DUMP] + SpecTemp paper rule k=8"
    table = results_table(run.results, list(run.tasks), baseline="k0")
    assert "[DUMP] + SpecTemp auto k=8" in table and "[DUMP] + SpecTemp paper rule k=8" in table
    summary = json.loads((options.output_dir / "summary.json").read_text())
    assert summary["projection"]["method"] == "spectemp" and summary["projection"]["mode"] == "auto"
    assert [row["label"] for row in summary["rows"]][2:4] == ["[DUMP] + SpecTemp auto k=8",
                                                              "[DUMP] + SpecTemp paper rule k=8"]
    cards = {name: (run.folders[name] / "README.md").read_text() for name in ("spectemp", "spectemp-reference")}
    assert "SpecTemp, auto mode" in cards["spectemp"]
    assert "SpecTemp, reference mode (the paper's rule)" in cards["spectemp-reference"]


def test_every_score_equals_ndcg_computed_by_hand(tiny_run):
    """Every cell of the table (5 encoder rows x 2 tasks, 2 decoder rows x 2 sampled tasks) equals nDCG@10 computed
    by hand from the row folder's own vectors."""
    options, run = tiny_run
    sampled = options.output_dir / "eval-data-decoder"
    for result in run.results + run.decoder_results:
        for task, scores in result.scores.items():
            collection = run.tasks[task] if task in run.tasks else sampled / task
            hand = hand_ndcg_at_10(result.row.folder, collection)  # mteb rounds its scores to 5 decimals
            assert scores["ndcg_at_10"] == pytest.approx(hand, abs=6e-6), (result.row.name, task)


def test_texts_per_second_are_the_measured_ones_and_a_resume_does_not_measure_again(tiny_run, measured_speeds,
                                                                                    monkeypatch):
    """The table's texts/s are what `measure_speed` returned in the first run (not a value read back from the file
    it wrote), and a resumed run neither measures again nor changes them."""
    import hf_dumpembed.quickstart.pipeline as pipeline

    options, first = tiny_run
    assert len(measured_speeds) == 2  # encoder rows, decoder rows
    expected = measured_speeds[0] | measured_speeds[1]
    assert {r.row.name: r.texts_per_second for r in first.results + first.decoder_results} == expected
    summary = json.loads((options.output_dir / "summary.json").read_text())
    assert {row["name"]: row["texts_per_second"] for row in summary["rows"]} == {
        name: pytest.approx(value, rel=1e-3) for name, value in measured_speeds[0].items()}

    def must_not_run(*args, **kwargs):
        raise AssertionError("a resumed quickstart measured the encode speed again")

    monkeypatch.setattr(pipeline, "measure_speed", must_not_run)
    again = run_quickstart(options)
    assert {r.row.name: r.texts_per_second for r in again.results + again.decoder_results} == expected


def test_summary_matches_the_results(tiny_run):
    options, run = tiny_run
    summary = json.loads((options.output_dir / "summary.json").read_text())
    assert summary["kind"] == "quickstart" and summary["mode"] == "tiny"
    assert summary["tasks"] == ["PyFAQ", "StdlibCode"]
    assert summary["machine"]["cores"] >= 1 and summary["machine"]["libraries"]["torch"]
    by_name = {row["name"]: row for row in summary["rows"]}
    for result in run.results:
        assert by_name[result.row.name]["scores"]["PyFAQ"] == result.ndcg("PyFAQ")
        assert by_name[result.row.name]["mean"] == pytest.approx(np.mean([result.ndcg(t) for t in summary["tasks"]]))
    assert {step["name"] for step in summary["steps"]} >= {"data", "train-k0", "train-k4", "fit", "evaluate", "push"}


def test_stored_scores_equal_a_full_mteb_run(tiny_run, tmp_path):
    """The shortcut (one encoding pass, each folder's head on it) scores exactly what `hf-dumpembed eval` does."""
    from hf_dumpembed.evaluation import run_eval

    options, run = tiny_run
    for name in ("k4", "spectemp"):
        result = next(r for r in run.results if r.row.name == name)
        full = run_eval(result.row.folder, [str(run.tasks["PyFAQ"])], results_dir=tmp_path / name, batch_size=8)
        scores = {row.task: row.scores for row in full.rows}["PyFAQ"]
        assert scores["ndcg_at_10"] == pytest.approx(result.ndcg("PyFAQ"), abs=1e-6)
        assert scores["mrr_at_10"] == pytest.approx(result.scores["PyFAQ"]["mrr_at_10"], abs=1e-6)


def test_results_are_filed_in_mteb_layout(tiny_run):
    from hf_dumpembed.evaluation.results import read_task_result, result_files

    options, run = tiny_run
    files = result_files(options.output_dir / "results")
    assert len(files) == 2 * (len(run.results) + len(run.decoder_results))
    spectemp = [f for f in files if "tiny-quickstart" in str(f) and f.stem == "StdlibCode"]
    assert len(spectemp) == 1
    result = read_task_result(spectemp[0])
    assert result.get_score() == pytest.approx(run.results[2].ndcg("StdlibCode"))


def test_a_second_run_resumes_without_redoing_anything(tiny_run, capsys):
    options, first = tiny_run
    again = run_quickstart(options)
    assert all(record.skipped for record in again.records)
    for before, after in zip(first.results + first.decoder_results, again.results + again.decoder_results,
                             strict=True):
        assert after.scores == before.scores  # from the stored encodings (texts/s: see the test above)
    assert "done before, skipped" in capsys.readouterr().out
    stored = sorted(p.relative_to(options.output_dir / "eval-cache") for p in
                    (options.output_dir / "eval-cache").rglob("*.safetensors"))
    assert len(stored) == 2 * 3  # k0, k4 and decoder: one encoding per task each, keyed by the weights' revision


def _table_without_speeds(text: str) -> list[str]:
    """The printed results table (header, rule, one line per model) without its last column, texts/s (measured)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Held-out nDCG@10")) + 1
    end = next(i for i in range(start, len(lines)) if not lines[i].strip() or lines[i].startswith("("))
    return [line.rsplit(maxsplit=1)[0].rstrip() for line in lines[start:end]]


def test_a_run_killed_mid_training_resumes_from_its_checkpoint_and_prints_the_same_table(tiny_run, tmp_path,
                                                                                         monkeypatch, capsys):
    """Stopped right after the K=4 fine-tuning wrote checkpoint-5 (of 6 steps), the same command resumes: K=0 is not
    trained again, K=4 runs step 6 only, and the printed table (all but the measured texts/s) is the one an
    uninterrupted run printed."""
    from hf_dumpembed.quickstart import pipeline
    from hf_dumpembed.quickstart.summary import results_table
    from tests.support.training_fixtures import KillAfterSave, StepsRan

    reference, done = tiny_run
    options = dataclasses.replace(reference, output_dir=tmp_path / "run", decoder=False)
    ran: dict[str, list[StepsRan]] = {}
    kill = {"minilm-k4": KillAfterSave(step=5)}

    def spied_train(config, resume=False, callbacks=()):  # noqa: ANN001, ANN202
        name = Path(config.output).name
        ran.setdefault(name, []).append(StepsRan())
        extra = [ran[name][-1], *([kill.pop(name)] if name in kill else [])]
        return real_train(config, resume=resume, callbacks=[*callbacks, *extra])

    real_train = pipeline.train
    monkeypatch.setattr(pipeline, "train", spied_train)
    with pytest.raises(KeyboardInterrupt):
        run_quickstart(options)
    assert not (options.output_dir / "minilm-k4").exists()
    assert (options.output_dir / "minilm-k4.checkpoints" / "checkpoint-5" / "trainer_state.json").exists()
    capsys.readouterr()
    again = run_quickstart(options)
    printed = capsys.readouterr().out
    assert [(r.started_at, r.steps) for r in ran["minilm-k0"]] == [(0, [1, 2, 3, 4, 5, 6])]  # not trained again
    assert [(r.started_at, r.steps) for r in ran["minilm-k4"]] == [(0, [1, 2, 3, 4, 5]), (5, [6])]
    tasks = list(done.tasks)
    assert _table_without_speeds(printed) == _table_without_speeds(
        "Held-out nDCG@10\n" + results_table(done.results, tasks, baseline="k0") + "\n\n")
    for before, after in zip(done.results, again.results, strict=True):
        for task in tasks:
            assert after.ndcg(task) == pytest.approx(before.ndcg(task), abs=1e-9), (after.row.name, task)


def test_a_run_with_other_settings_is_refused_in_the_same_folder(tiny_run):
    options, _ = tiny_run
    other = QuickstartOptions(output_dir=options.output_dir, data_dir=options.data_dir, encoder=options.encoder,
                              budget=TINY_BUDGET, num_dump_tokens=2, progress=False)
    with pytest.raises(ValueError, match="other settings .*num_dump_tokens.*--overwrite"):
        run_quickstart(other)


def test_interrupted_step_runs_again_and_finished_ones_do_not(tmp_path):
    calls: list[str] = []

    def fail() -> None:
        raise KeyboardInterrupt

    runner = StepRunner(tmp_path, {"a": 1}, total=2)
    (tmp_path / "one").mkdir()
    runner.run("one", "first", [tmp_path / "one"], lambda: calls.append("one"))
    with pytest.raises(KeyboardInterrupt):
        runner.run("two", "second", [tmp_path / "two"], fail)
    again = StepRunner(tmp_path, {"a": 1}, total=2)
    assert again.run("one", "first", [tmp_path / "one"], lambda: calls.append("one-again")).skipped
    assert not again.run("two", "second", [tmp_path / "two"], lambda: calls.append("two")).skipped
    assert calls == ["one", "two"]
    (tmp_path / "one").rmdir()  # an output deleted by hand: its step runs again
    assert not StepRunner(tmp_path, {"a": 1}, total=1).run("one", "first", [tmp_path / "one"],
                                                           lambda: calls.append("one-redo")).skipped
    assert calls[-1] == "one-redo"


def test_a_corrupt_state_file_is_named(tmp_path):
    (tmp_path / "quickstart-state.json").write_text("{not json")
    with pytest.raises(ValueError, match="quickstart-state.json is not valid JSON"):
        StepRunner(tmp_path, {}, total=1)


def test_optional_collections_that_cannot_be_fetched_are_skipped_with_the_reason(tiny_data, tmp_path, monkeypatch):
    data = tmp_path / "data"
    for name in ("StdlibCode", "StdlibCodeTrain"):
        (data / name).parent.mkdir(parents=True, exist_ok=True)
        import shutil

        shutil.copytree(tiny_data / name, data / name)
    monkeypatch.setenv("PATH", str(tmp_path / "no-tools"))  # no apt-get: the Debian sources are out of reach
    available, skipped = prepare_collections(data, ["StdlibCodeTrain", "StdlibCode", "ManPages"])
    assert set(available) == {"StdlibCodeTrain", "StdlibCode"}
    assert "apt-get" in skipped["ManPages"]
    with pytest.raises(ValueError, match="unknown collection 'Cranfield'"):
        prepare_collections(data, ["Cranfield"])


def test_bad_options_are_refused():
    with pytest.raises(ValueError, match="--dump-tokens must be an integer >= 1"):
        QuickstartOptions(num_dump_tokens=0)
    with pytest.raises(ValueError) as info:
        QuickstartOptions(num_dump_tokens="4")  # pydantic checks it (strict integer), the sentence stays ours
    assert str(info.value) == "--dump-tokens must be an integer >= 1 (the baseline is K = 0); got '4'."
    options = QuickstartOptions(output_dir="out", data_dir="data", eval_tasks=["PyFAQ"])
    assert options.output_dir == Path("out") and options.data_folder == Path("data")
    assert options.eval_tasks == ("PyFAQ",)
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.seed = 1  # type: ignore[misc]
