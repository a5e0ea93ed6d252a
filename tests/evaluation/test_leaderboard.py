"""The MTEB leaderboard path end to end, offline: official tasks loaded by mteb and ``datasets`` from a local fake of
the Hub (``tests/support/hub_download_fixtures.py``), ``hf-dumpembed eval`` -> ``hf-dumpembed submission`` -> the kit
read back with mteb's own validation, and the written ModelMeta loading the model from the (fake) Hub.

Nothing inside mteb, ``datasets`` or ``huggingface_hub`` is patched: the CLI runs in a subprocess whose only
difference from a user's shell is ``HF_ENDPOINT`` (pointing at 127.0.0.1) and fresh ``HF_HOME`` /
``HF_DATASETS_CACHE`` folders. Run alone: ``python -m pytest tests/evaluation/test_leaderboard.py -q``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from hf_dumpembed.evaluation import retrieval_metrics
from hf_dumpembed.evaluation.model_meta import content_revision
from hf_dumpembed.model.builder import BuildOptions, build
from tests.support.hub_download_fixtures import FakeHubDownloads
from tests.support.leaderboard_fixtures import (
    DWZHU_LONGEMBED_TASK,
    LONGEMBED_TASK,
    STANDARD_TASK,
    dwzhu_longembed_repo,
    model_repo,
    passkey_repo,
    standard_repo,
)

MODEL_NAME = "test-org/tiny-dump"
ROOT = Path(__file__).resolve().parents[2]
OFFLINE_FLAGS = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE")


def online_env(hub: FakeHubDownloads, home: Path) -> dict[str, str]:
    """The test session's environment with the Hub pointed at the fake and every cache fresh."""
    env = {k: v for k, v in os.environ.items() if k not in OFFLINE_FLAGS}
    env.update(HF_ENDPOINT=hub.url, HF_HOME=str(home / "hf_home"), HF_DATASETS_CACHE=str(home / "datasets"),
               MTEB_CACHE=str(home / "mteb"), PYTHONPATH=os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]),
               HF_HUB_DISABLE_PROGRESS_BARS="1", HF_DATASETS_DISABLE_PROGRESS_BARS="1", TQDM_DISABLE="1")
    return env


def run(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    import resource
    import time

    start, cpu = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
    result = subprocess.run([sys.executable, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"{args[:3]} failed:\n{result.stdout[-3000:]}\n{result.stderr[-6000:]}"
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    label = " ".join(args[1:3]) if args[0] == "-m" else "submission + ModelMeta.load_model"
    sys.stdout.write(f"{label}: {time.perf_counter() - start:.1f} s wall, "  # shown with pytest -s
                     f"{used.ru_utime + used.ru_stime - cpu.ru_utime - cpu.ru_stime:.1f} s CPU\n")
    return result


# `hf-dumpembed submission` (the console script's entry point, in this process to pay the imports once), then the
# written ModelMeta loading the model the way mteb does.
SUBMIT_AND_LOAD = """
import json, sys
from hf_dumpembed.cli import main
from mteb.models.model_meta import ModelMeta

kit, texts, submission_args = sys.argv[1], sys.argv[2:4], sys.argv[4:]
main(["submission", *submission_args])
namespace = {}
exec(open(kit + "/model_meta.py").read(), namespace)  # the snippet for the mteb PR, as mteb's registry would import it
(meta,) = [v for v in namespace.values() if isinstance(v, ModelMeta)]
model = meta.load_model()  # what mteb.get_model(name) does once the PR has registered the ModelMeta
vectors = model.model.encode(texts, convert_to_numpy=True)
print(json.dumps({"loader": type(model).__name__, "vectors": vectors.tolist()}))
"""


@pytest.fixture(scope="module")
def leaderboard_run(tiny_bert: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """eval (one standard + one LongEmbed task) -> submission -> ModelMeta.load_model, all through one fake Hub."""
    work = tmp_path_factory.mktemp("leaderboard")
    # Mean pooling spreads a tiny random model's vectors (its [CLS] states are nearly all alike, so rankings would
    # hinge on float rounding and two encoders batching differently could disagree).
    model = build(tiny_bert, work / "tiny-dump", BuildOptions(num_dump_tokens=4, pooling="mean"))
    revision = content_revision(model)
    standard, standard_qrels = standard_repo()
    passkey, _ = passkey_repo()
    with FakeHubDownloads([standard, passkey, model_repo(model, MODEL_NAME, revision)], lifetime_s=900) as hub:
        env = online_env(hub, work)
        evaluate = run(["-m", "hf_dumpembed.cli", "eval", str(model), "--task", STANDARD_TASK, "--task",
                        LONGEMBED_TASK, "--results-dir", str(work / "results"), "--model-name", MODEL_NAME,
                        "--batch-size", "8"], env, work)
        eval_requests = list(hub.requests)
        texts = ["Remove any common leading whitespace from every line.", "What is the pass key?"]
        submission = run(["-c", SUBMIT_AND_LOAD, str(work / "kit"), *texts, str(model), "--results",
                          str(work / "results"), str(work / "kit"), "--model-name", MODEL_NAME, "--license",
                          "apache-2.0"], env, work)
        load_requests = hub.requests[len(eval_requests):]
    return {"work": work, "model": model, "revision": revision, "eval": evaluate, "submission": submission,
            "eval_requests": eval_requests, "load_requests": load_requests, "standard": standard,
            "passkey": passkey, "standard_qrels": standard_qrels, "texts": texts,
            "loaded": json.loads(submission.stdout.strip().splitlines()[-1])}


def test_eval_loads_official_tasks_from_the_hub_at_their_pinned_revision(leaderboard_run: dict) -> None:
    requests = leaderboard_run["eval_requests"]
    for repo in (leaderboard_run["standard"], leaderboard_run["passkey"]):
        assert ("GET", f"/api/datasets/{repo.repo_id}/revision/{repo.sha}") in requests
        downloaded = {p.split(f"/resolve/{repo.sha}/", 1)[1] for m, p in requests
                      if m == "GET" and p.startswith(f"/datasets/{repo.repo_id}/resolve/{repo.sha}/")}
        assert {p for p in repo.files if p.endswith(".parquet")} <= downloaded  # every split of every config
    table = leaderboard_run["eval"].stdout
    assert STANDARD_TASK in table and LONGEMBED_TASK in table and "test_32768" in table


def test_results_are_filed_under_the_official_names_and_match_an_independent_ndcg(leaderboard_run: dict) -> None:
    from sentence_transformers import SentenceTransformer

    folder = leaderboard_run["work"] / "results" / "results" / "test-org__tiny-dump" / leaderboard_run["revision"]
    assert sorted(p.name for p in folder.glob("*.json")) == [f"{LONGEMBED_TASK}.json", f"{STANDARD_TASK}.json",
                                                             "model_meta.json"]
    standard = json.loads((folder / f"{STANDARD_TASK}.json").read_text())
    assert standard["dataset_revision"] == leaderboard_run["standard"].sha
    passkey = json.loads((folder / f"{LONGEMBED_TASK}.json").read_text())
    assert passkey["dataset_revision"] == leaderboard_run["passkey"].sha
    assert sorted(passkey["scores"]) == sorted(f"test_{n}" for n in (256, 512, 1024, 2048, 4096, 8192, 16384, 32768))
    # The same numbers from the served data and the model's own vectors, without mteb.
    import pyarrow.parquet as pq

    files = leaderboard_run["standard"].files
    corpus = pq.read_table(_bytes(files["corpus/test-00000-of-00001.parquet"])).to_pylist()
    queries = pq.read_table(_bytes(files["queries/test-00000-of-00001.parquet"])).to_pylist()
    model = SentenceTransformer(str(leaderboard_run["model"]), trust_remote_code=True)
    q_vectors = model.encode_query([q["text"] for q in queries])
    d_vectors = model.encode_document([f"{d['title']} {d['text']}".strip() for d in corpus])  # mteb joins so
    ours = retrieval_metrics(q_vectors, d_vectors, [q["_id"] for q in queries], [d["_id"] for d in corpus],
                             leaderboard_run["standard_qrels"])
    assert standard["scores"]["test"][0]["ndcg_at_10"] == pytest.approx(ours["ndcg_at_10"], abs=1e-4)


def _bytes(data: bytes):
    import pyarrow as pa

    return pa.BufferReader(data)


def test_submission_passes_mteb_validation(leaderboard_run: dict) -> None:
    import mteb
    from mteb.models.model_meta import ModelMeta

    kit, revision = leaderboard_run["work"] / "kit", leaderboard_run["revision"]
    target = kit / "results" / "test-org__tiny-dump" / revision
    assert sorted(p.name for p in target.iterdir()) == [f"{LONGEMBED_TASK}.json", f"{STANDARD_TASK}.json",
                                                        "model_meta.json"]
    assert not (kit / "WARNING.txt").exists()  # the content revision is a 40-hex sha, as the Hub's
    # require_model_meta: results without the kit's model_meta.json next to them would be skipped.
    results = mteb.ResultCache(kit).load_results(validate_and_filter=True, include_remote=False,
                                                 require_model_meta=True)
    (model_result,) = results.model_results
    assert (model_result.model_name, model_result.model_revision) == (MODEL_NAME, revision)
    by_task = {t.task_name: t for t in model_result.task_results}
    assert sorted(by_task) == [LONGEMBED_TASK, STANDARD_TASK]  # validation drops what fails: nothing was dropped
    assert sorted(by_task[LONGEMBED_TASK].scores) == sorted(mteb.get_task(LONGEMBED_TASK).eval_splits)
    # mteb's ModelMeta checks: pydantic validation of the JSON, the PR snippet, zero-shot status on these tasks.
    meta = ModelMeta.model_validate_json_resolved((target / "model_meta.json").read_text())
    namespace: dict = {}
    exec((kit / "model_meta.py").read_text(), namespace)  # noqa: S102 - our own generated source
    (from_snippet,) = [v for v in namespace.values() if isinstance(v, ModelMeta)]
    assert from_snippet == meta and meta.name == MODEL_NAME and meta.revision == revision
    assert meta.is_zero_shot_on([STANDARD_TASK, LONGEMBED_TASK]) is True


def test_written_model_meta_loads_the_model_from_the_hub(leaderboard_run: dict) -> None:
    from sentence_transformers import SentenceTransformer

    loaded, revision = leaderboard_run["loaded"], leaderboard_run["revision"]
    assert loaded["loader"] == "SentenceTransformerEncoderWrapper"
    model_requests = [p for _, p in leaderboard_run["load_requests"] if MODEL_NAME in p]
    assert any(p.startswith(f"/{MODEL_NAME}/resolve/{revision}/") and p.endswith(".safetensors")
               for p in model_requests)
    assert any(p.endswith(".py") and f"/resolve/{revision}/" in p for p in model_requests)  # the remote code
    local = SentenceTransformer(str(leaderboard_run["model"]), trust_remote_code=True)
    expected = local.encode(leaderboard_run["texts"], convert_to_numpy=True)
    np.testing.assert_allclose(np.array(loaded["vectors"]), expected, atol=1e-5)


def test_dwzhu_longembed_tasks_fail_with_a_clear_error(bert_dump_model: Path, tmp_path: Path) -> None:
    """dwzhu/LongEmbed as its dataset card lays it out: the installed `datasets` cannot build it (one schema inferred
    from the corpus split, CastError on queries); `eval` says so and what to run instead. The day a `datasets`
    release loads this layout, this test fails: then drop the error and run these tasks in the test above."""
    repo, _ = dwzhu_longembed_repo()
    with FakeHubDownloads([repo], lifetime_s=600) as hub:
        result = subprocess.run(
            [sys.executable, "-m", "hf_dumpembed.cli", "eval", str(bert_dump_model), "--task", DWZHU_LONGEMBED_TASK,
             "--results-dir", str(tmp_path / "results")],
            env=online_env(hub, tmp_path), cwd=tmp_path, capture_output=True, text=True, timeout=600)
        assert ("GET", f"/datasets/{repo.repo_id}/resolve/{repo.sha}/narrativeqa/corpus.jsonl") in hub.requests
    assert result.returncode != 0
    assert "could not build a task's Hub dataset: CastError" in result.stderr, result.stderr[-3000:]
    assert f"{DWZHU_LONGEMBED_TASK} load dwzhu/LongEmbed" in result.stderr and "LEMBPasskeyRetrieval" in result.stderr


def test_fake_hub_serves_only_the_pinned_revision_and_stops_by_itself() -> None:
    import time
    import urllib.error
    import urllib.request

    from tests.support.hub_download_fixtures import HubRepo

    sha = "a" * 40
    repo = HubRepo("org/data", "dataset", sha, {"README.md": b"---\n---\n", "sub/part.jsonl": b'{"x": 1}\n' * 4})
    with FakeHubDownloads([repo], lifetime_s=1.0) as hub:
        with urllib.request.urlopen(f"{hub.url}/api/datasets/org/data/revision/main") as reply:
            assert json.load(reply)["sha"] == sha
        with pytest.raises(urllib.error.HTTPError) as error:
            urllib.request.urlopen(f"{hub.url}/api/datasets/org/data/revision/{'b' * 40}")
        assert error.value.code == 404 and error.value.headers["X-Error-Code"] == "RevisionNotFound"
        ranged = urllib.request.Request(f"{hub.url}/datasets/org/data/resolve/{sha}/sub/part.jsonl",
                                        headers={"Range": "bytes=2-4"})
        with urllib.request.urlopen(ranged) as reply:
            assert reply.status == 206 and reply.read() == b'x":' and reply.headers["X-Repo-Commit"] == sha
        with urllib.request.urlopen(f"{hub.url}/api/datasets/org/data/tree/{sha}?recursive=true") as reply:
            assert [e["path"] for e in json.load(reply)] == ["README.md", "sub", "sub/part.jsonl"]
        time.sleep(1.5)
        assert hub.server.socket.fileno() == -1  # lifetime over: shut down and closed without __exit__
