"""push stages only verified regular files of the folder: no links out, no special files, safetensors by header,
training/ by allowlist, no credentials (fault injection on a copy of a built folder; the static checks run
without loading the model, the push-level cases stop before any request)."""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import pytest

from hf_dumpembed.publishing.checks import FolderKind, FolderReport, PublishRefused, stage_files, static_checks
from hf_dumpembed.publishing.hub import push_folder
from hf_dumpembed.publishing.staging_safety import content_problem, safetensors_problem, scan_folder
from tests.card_fixtures import add_training_metadata, copy_model

HF_TOKEN_LIKE = "hf_" + "aB3dE5gH7jK9mN1pQ3sT5vX7zA9cE1gI3k"
PRIVATE_KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n"


@pytest.fixture
def folder(bert_dump_model, tmp_path) -> Path:
    out = copy_model(bert_dump_model, tmp_path / "model")
    add_training_metadata(out)
    return out


def _problems(folder: Path) -> str:
    report = FolderReport(folder=folder, kind=FolderKind.DUMPEMBED)
    static_checks(folder, report)
    return "\n".join(report.problems)


def test_a_clean_folder_passes_the_file_checks(folder):
    report = FolderReport(folder=folder, kind=FolderKind.DUMPEMBED)
    static_checks(folder, report)
    assert not [p for p in report.problems if "card" not in p and "README" not in p]
    assert any("regular file inside the folder" in line for line in report.passed)


@pytest.mark.parametrize("name", ["vocab.txt", "training/config.yaml", "extra.safetensors", "plots/x.png"])
def test_symlinks_out_of_the_folder_are_refused(folder, tmp_path, name):
    secret = tmp_path / "outside.txt"
    secret.write_text("private notes of the author\n")
    link = folder / name
    link.parent.mkdir(exist_ok=True)
    link.unlink(missing_ok=True)
    link.symlink_to(secret)
    problems = _problems(folder)
    assert f"{name} is a symbolic link (to a path outside the folder)" in problems
    assert name not in scan_folder(folder).files


def test_a_symlinked_folder_is_refused_and_not_followed(folder, tmp_path):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "config.yaml").write_text("secret: 1\n")
    os.rename(folder / "training", tmp_path / "training-moved")
    (folder / "training").symlink_to(outside, target_is_directory=True)
    assert "training is a symbolic link" in _problems(folder)
    assert not any(f.startswith("training/") for f in scan_folder(folder).files)


def test_hard_links_to_outside_files_are_refused(folder, tmp_path):
    secret = tmp_path / "token.json"
    secret.write_text(json.dumps({"note": "a file from elsewhere"}))
    (folder / "training" / "environment.json").unlink()
    os.link(secret, folder / "training" / "environment.json")
    assert "training/environment.json is a hard link shared with 1 file(s) outside the folder" in _problems(folder)


def test_special_files_are_refused(folder):
    os.mkfifo(folder / "training" / "data_files.json")
    assert "training/data_files.json is not a regular file" in _problems(folder)


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        (b"not a safetensors file at all", "header length"),
        (struct.pack("<Q", 5) + b"{bad}", "not UTF-8 JSON"),
        (struct.pack("<Q", 2) + b"{}" + b"\x80\x04pickle", "cover 0 of the 8 data bytes"),
    ],
)
def test_safetensors_are_checked_by_header_not_by_name(folder, payload, message):
    (folder / "extra.safetensors").write_bytes(payload)
    assert "extra.safetensors: " in _problems(folder) and message in _problems(folder)


def test_truncated_weights_are_refused_statically(folder):
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    assert "model.safetensors: " in _problems(folder)


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("training/notes.txt", b"todo", "training/notes.txt is not one of the training side files"),
        ("training/model.pt.bak", b"\x80\x04\x95pickle", "training/model.pt.bak is not one of the training side"),
        ("training/sub/config.yaml", b"a: 1\n", "training/sub/config.yaml is not one of the training side files"),
        ("training/config.yaml", b"\x80\x04\x95pickle", "training/config.yaml is a pickle"),
        ("training/environment.json", b"{not json", "training/environment.json is not valid JSON"),
        ("training/config.yaml", b"a: [1\n", "training/config.yaml is not valid YAML"),
        ("plots/spectrum.png", b"GIF89a", "plots/spectrum.png is named .png but is not a PNG"),
        ("vocab.txt", b"\xff\xfe\x00bad", "vocab.txt is not UTF-8 text"),
    ],
)
def test_files_are_checked_by_name_and_content_type(folder, name, content, message):
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    assert message in _problems(folder)


@pytest.mark.parametrize(
    ("name", "content", "kind"),
    [
        ("training/environment.json", json.dumps({"token": HF_TOKEN_LIKE}), "a Hugging Face token"),
        ("training/config.yaml", f"hub_token: {HF_TOKEN_LIKE}\n", "a Hugging Face token"),
        ("README.md", None, "a private key"),
        ("tokenizer_config.json", None, "a GitHub token"),
        ("training/config.yaml", 'api_key: "s3cr3t-value-123"\n', "a password or API key assignment"),
    ],
)
def test_nothing_that_looks_like_a_credential_is_staged(folder, name, content, kind):
    path = folder / name
    if content is None:
        extra = PRIVATE_KEY if kind == "a private key" else "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
        content = path.read_text() + ("\n" + extra if name.endswith(".md") else "")
        if name.endswith(".json"):
            content = json.dumps({**json.loads(path.read_text()), "note": extra})
    path.write_text(content)
    problems = _problems(folder)
    assert f"{name} contains what looks like {kind}" in problems
    assert HF_TOKEN_LIKE not in problems and "ghp_" not in problems  # the secret itself is never printed


def test_a_secret_in_safetensors_metadata_is_refused(folder):
    import numpy as np
    from safetensors.numpy import save_file

    save_file({"x": np.zeros(2, dtype=np.float32)}, str(folder / "extra.safetensors"), {"token": HF_TOKEN_LIKE})
    assert "extra.safetensors's header metadata contains what looks like a Hugging Face token" in _problems(folder)


def test_push_refuses_a_link_out_before_any_request(folder, tmp_path, monkeypatch):
    secret = tmp_path / "id_rsa"
    secret.write_text(PRIVATE_KEY)
    (folder / "training" / "config.yaml").unlink()
    (folder / "training" / "config.yaml").symlink_to(secret)
    with pytest.raises(PublishRefused, match="training/config.yaml is a symbolic link"):
        push_folder(folder, "acme/tiny-dump", dry_run=True, staging_dir=tmp_path / "stage")
    assert not (tmp_path / "stage" / "training" / "config.yaml").exists()


def test_staging_refuses_a_file_swapped_after_the_check(folder, tmp_path):
    verified = scan_folder(folder).files
    (folder / "training" / "config.yaml").unlink()
    (folder / "training" / "config.yaml").symlink_to(tmp_path / "elsewhere")
    (tmp_path / "elsewhere").write_text("swapped in after the check\n")
    with pytest.raises(OSError):
        stage_files(folder, sorted(verified), tmp_path / "stage", verified)
    assert not (tmp_path / "stage" / "training" / "config.yaml").exists()


def test_a_kept_staging_folder_shares_no_inode_with_the_model(folder, tmp_path):
    verified = scan_folder(folder).files
    stage_files(folder, sorted(verified), tmp_path / "stage", verified, link_weights=False)
    assert (folder / "model.safetensors").stat().st_nlink == 1
    assert scan_folder(folder).problems == []


def test_header_checker_accepts_real_safetensors(folder):
    path = folder / "model.safetensors"
    with path.open("rb") as handle:
        assert safetensors_problem(handle, path.stat().st_size) is None
    assert content_problem("config.json", (folder / "config.json").read_bytes()) is None
