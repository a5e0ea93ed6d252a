"""hf-dumpembed push: folder checks in a fresh process, refusal before any request, the real huggingface_hub client
against a local fake Hub (tests/support/publish_fixtures.py), dry runs, tokens."""

from __future__ import annotations

import hashlib
import json
import os
import runpy
import subprocess
import sys
from pathlib import Path

import huggingface_hub
import pytest
from huggingface_hub import constants as hub_constants

from hf_dumpembed.cli import main
from hf_dumpembed.export.stock import export_stock_st
from hf_dumpembed.publishing.hub import push_folder
from hf_dumpembed.publishing.push_checks import PublishRefused
from tests.support.card_fixtures import copy_model
from tests.support.publish_fixtures import GITATTRIBUTES, TOKEN, Repo


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


@pytest.fixture
def no_token(monkeypatch, tmp_path):
    for name in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_OIDC_RESOURCE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(hub_constants, "HF_TOKEN_PATH", str(tmp_path / "no-saved-token"))
    assert huggingface_hub.get_token() is None


def test_push_commits_exactly_the_folder(publishable, hub, tmp_path):
    """The installed command in its own process, reaching the fake Hub through HF_ENDPOINT like a user's shell."""
    env = {**os.environ, "HF_ENDPOINT": hub.url, "HF_TOKEN": TOKEN, "HF_HUB_OFFLINE": "0",
           "TRANSFORMERS_OFFLINE": "0", "HF_HUB_DISABLE_XET": "1", "HF_HOME": str(tmp_path / "hf_home")}
    command = [sys.executable, "-m", "hf_dumpembed.cli", "push", str(publishable), "acme/tiny-dump", "--private",
               "--commit-message", "first upload"]
    result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
    out, err = result.stdout, result.stderr
    assert result.returncode == 0, err[-3000:]
    repo = hub.repos["acme/tiny-dump"]
    assert repo.private and len(repo.commits) == 1 and repo.commits[0]["summary"] == "first upload"
    sha = repo.commits[0]["oid"]
    assert f"commit sha (the revision to pin): {sha}" in out
    assert "AutoModel vs SentenceTransformer: max |Δ|" in out and "FAIL" not in out

    sent = hub.files("acme/tiny-dump")
    assert sent == {".gitattributes": GITATTRIBUTES, **_files(publishable)}  # byte for byte, nothing else
    assert {"plots/spectrum.png", "training/config.yaml", "modeling_dumpembed.py", "README.md"} <= set(sent)
    assert hub.uploaded_as["model.safetensors"] == "lfs" and hub.uploaded_as["config.json"] == "regular"
    weights = (publishable / "model.safetensors").read_bytes()
    assert hub.lfs[hashlib.sha256(weights).hexdigest()] == weights
    paths = [p for _, p in hub.requests]
    assert paths[0] == "/api/repos/create" and "/api/models/acme/tiny-dump/commit/main" in paths
    assert "/acme/tiny-dump.git/info/lfs/objects/batch" in paths
    assert TOKEN not in out + err
    assert not any(TOKEN.encode() in c for c in _files(publishable).values())


def test_stock_export_to_a_branch_replaces_stale_files(publishable, hub, tmp_path, monkeypatch):
    monkeypatch.delenv("HF_TOKEN")  # this push authenticates with the saved login (`hf auth login`) instead
    (tmp_path / "token").write_text(TOKEN)
    monkeypatch.setattr(hub_constants, "HF_TOKEN_PATH", str(tmp_path / "token"))
    hub.repos["acme/tiny-dump"] = Repo(private=False)  # as left by an earlier push of the DumpEmbed folder
    hub.repos["acme/tiny-dump"].branches["main"].update(_files(publishable))
    stock = export_stock_st(publishable, tmp_path / "stock")
    with pytest.raises(ValueError, match="stock export whose card must be rendered .*pass --source"):
        push_folder(stock, "acme/tiny-dump", branch="stock")  # export-st writes no card; push renders it from MODEL
    result = push_folder(stock, "acme/tiny-dump", branch="stock", source=publishable)
    assert result.report.kind.value == "stock"
    assert any("vs the source DumpEmbed folder" in line for line in result.report.passed)
    assert not (stock / "README.md").exists()  # rendered in the staged copy only
    sent = hub.files("acme/tiny-dump", "stock")
    assert sent == {".gitattributes": GITATTRIBUTES, "README.md": sent["README.md"], **_files(stock)}
    assert 'SentenceTransformer("acme/tiny-dump")' in sent["README.md"].decode()
    assert "modeling_dumpembed.py" in result.deleted and "plots/spectrum.png" in result.deleted
    assert hub.files("acme/tiny-dump") == {".gitattributes": GITATTRIBUTES, **_files(publishable)}  # main untouched
    assert result.commit_sha == hub.repos["acme/tiny-dump"].commits[-1]["oid"]


@pytest.mark.parametrize(
    ("breakage", "repo", "message"),
    [
        (lambda f: (f / "pytorch_model.bin").write_bytes(b"pickle"), "acme/tiny-dump",
         "non-safetensors weights: pytorch_model.bin"),
        (lambda f: (f / "notes.txt").write_text("todo"), "acme/tiny-dump",
         "notes.txt: is not a file hf_dumpembed writes"),
        (lambda f: (f / "plots" / "raw.csv").write_text("1,2"), "acme/tiny-dump",
         "plots/raw.csv: is not a file hf_dumpembed writes"),
        (lambda f: (f / "modeling_dumpembed.py").unlink(), "acme/tiny-dump",
         "modeling_dumpembed.py: is missing"),
    ],
)
def test_broken_folder_is_refused_before_any_request(publishable, hub, tmp_path, breakage, repo, message):
    folder = copy_model(publishable, tmp_path / "broken")
    breakage(folder)
    with pytest.raises(PublishRefused, match=message) as refused:
        push_folder(folder, repo)
    assert "Nothing was uploaded" in str(refused.value)
    assert hub.requests == []


def test_push_of_a_freshly_built_folder_needs_no_other_command(bert_dump_model, no_token, tmp_path, capsys):
    """`build` then `push --dry-run`: the card is rendered for the repo in the staged copy; the folder is untouched."""
    before = _files(bert_dump_model)
    stage = tmp_path / "stage"
    main(["push", str(bert_dump_model), "acme/fresh", "--dry-run", "--stage-dir", str(stage)])
    out = capsys.readouterr().out
    assert "model card rendered for the target repo" in out and "FAIL" not in out
    assert _files(bert_dump_model) == before
    card = (stage / "README.md").read_text()
    assert 'SentenceTransformer("acme/fresh", trust_remote_code=True' in card
    assert {path: content for path, content in _files(stage).items() if path != "README.md"} == {
        path: content for path, content in before.items() if path != "README.md"}


def test_a_card_for_the_repo_is_kept_and_an_evaluation_table_is_not_dropped(publishable, no_token, tmp_path):
    kept = push_folder(publishable, "acme/tiny-dump", dry_run=True, staging_dir=tmp_path / "a")
    assert "model card kept for the target repo" in kept.report.passed[0]
    assert (tmp_path / "a" / "README.md").read_bytes() == (publishable / "README.md").read_bytes()
    folder = copy_model(publishable, tmp_path / "evaluated")
    card = folder / "README.md"
    card.write_text(card.read_text() + "\n## Evaluation\n\n| task | nDCG@10 |\n|---|---|\n| PyFAQ | 0.5 |\n")
    with pytest.raises(ValueError, match="evaluation table.*pass --results DIR"):
        push_folder(folder, "acme/elsewhere", dry_run=True)


def test_a_folder_that_does_not_load_is_refused(publishable, hub, tmp_path, capsys):
    folder = copy_model(publishable, tmp_path / "corrupt")
    config = json.loads((folder / "config.json").read_text())
    config["text_config"]["hidden_size"] += 4  # weights of another shape: the header is fine, loading is not
    (folder / "config.json").write_text(json.dumps(config))
    # refused by the static weights check (the model's state dict on the meta device), before any load
    with pytest.raises(SystemExit, match="config.json and the weights do not belong together"):
        main(["push", str(folder), "acme/tiny-dump"])
    assert hub.requests == []


def test_missing_token_is_a_clear_error(publishable, no_token, monkeypatch):
    monkeypatch.setattr(hub_constants, "HF_HUB_OFFLINE", False)
    with pytest.raises(SystemExit, match="No Hugging Face token found: set the HF_TOKEN"):
        main(["push", str(publishable), "acme/tiny-dump"])


def test_a_rejected_token_is_a_clean_error_and_never_shown(publishable, hub, monkeypatch, capsys):
    wrong = "hf_wrong_token_never_to_be_printed"
    monkeypatch.setenv("HF_TOKEN", wrong)
    with pytest.raises(SystemExit, match="hf-dumpembed push: error: .*401") as exit_info:
        main(["push", str(publishable), "acme/tiny-dump"])
    out, err = capsys.readouterr()
    assert wrong not in out + err + str(exit_info.value)
    assert {path for _, path in hub.requests} <= {"/api/repos/create", "/api/models/acme/tiny-dump"}  # + repo_info
    assert hub.repos == {}


def test_offline_mode_and_bad_repo_ids_are_clear_errors(publishable, monkeypatch):
    monkeypatch.setattr(hub_constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(ValueError, match="HF_HUB_OFFLINE is set"):
        push_folder(publishable, "acme/tiny-dump")
    with pytest.raises(ValueError, match="owner/name"):
        push_folder(publishable, "tiny-dump", dry_run=True)
    with pytest.raises(ValueError, match="not a valid Hub repo id"):
        push_folder(publishable, "acme/bad name", dry_run=True)


def test_dry_run_stages_and_lists_without_token_or_network(publishable, no_token, tmp_path, capsys):
    stage = tmp_path / "stage"
    main(["push", str(publishable), "acme/tiny-dump", "--dry-run", "--stage-dir", str(stage)])
    out = capsys.readouterr().out
    assert "Dry run: nothing was uploaded" in out
    staged = _files(stage)
    assert staged == _files(publishable)
    for path, content in staged.items():
        assert f"{len(content):>12,}  {hashlib.sha256(content).hexdigest()}  {path}" in out
    assert f"bytes in {len(staged)} files" in out


def test_push_help_explains():
    from hf_dumpembed.cli import build_parser

    parser = build_parser()
    push = parser._subparsers._group_actions[0].choices["push"]
    assert "fresh" in push.description and "--dry-run" in push.format_help()


def test_push_script_is_the_push_command(monkeypatch, capsys):
    script = Path(__file__).resolve().parents[2] / "scripts" / "push_to_hub.py"
    monkeypatch.setattr(sys, "argv", [str(script), "--help"])
    with pytest.raises(SystemExit) as exit_info:
        runpy.run_path(str(script), run_name="__main__")
    out = capsys.readouterr().out
    assert exit_info.value.code == 0 and "usage: hf-dumpembed push" in out and "--dry-run" in out


def _push_error(argv: list[str]) -> str:
    with pytest.raises(SystemExit) as exit_info:
        main(["push", *argv])
    return str(exit_info.value.code)


def test_a_failed_push_removes_the_stage_dir_it_created(publishable, no_token, tmp_path, monkeypatch):
    """A refused `push --stage-dir NEW` removes the folders it created, after a static refusal and a failed
    fresh-process load alike."""
    from hf_dumpembed.publishing import push_checks

    stray = copy_model(publishable, tmp_path / "stray")
    (stray / "notes.txt").write_text("todo")
    message = _push_error([str(stray), "acme/tiny-dump", "--dry-run", "--stage-dir", str(tmp_path / "new" / "stage")])
    assert "notes.txt" in message and "Nothing was uploaded" in message
    assert not (tmp_path / "new").exists()

    def failing_load(loads):
        raise RuntimeError("the fresh process could not load the copy")

    monkeypatch.setattr(push_checks, "fresh_process_load", failing_load)
    stage = tmp_path / "stage"
    message = _push_error([str(publishable), "acme/tiny-dump", "--dry-run", "--stage-dir", str(stage)])
    assert "fresh-process load (trust_remote_code=True) failed: the fresh process could not load" in message
    assert not stage.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["stray"]


def test_a_failed_push_leaves_an_existing_stage_dir_as_it_was(publishable, no_token, tmp_path, monkeypatch):
    """An empty --stage-dir the user made is kept, and emptied again when the push fails after staging into it."""
    from hf_dumpembed.publishing import push_checks

    def failing_load(loads):
        raise RuntimeError("the fresh process could not load the copy")

    monkeypatch.setattr(push_checks, "fresh_process_load", failing_load)
    stage = tmp_path / "mine"
    stage.mkdir()
    _push_error([str(publishable), "acme/tiny-dump", "--dry-run", "--stage-dir", str(stage)])
    assert stage.is_dir() and list(stage.iterdir()) == []
    (stage / "keep.txt").write_text("mine")
    assert "is not empty" in _push_error([str(publishable), "acme/tiny-dump", "--dry-run", "--stage-dir", str(stage)])
    assert _files(stage) == {"keep.txt": b"mine"}
