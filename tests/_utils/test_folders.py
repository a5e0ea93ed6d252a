"""Staged outputs: created with the user's umask, a failed or refused file write leaves the old file."""

from __future__ import annotations

import os
import stat

import pytest

from hf_dumpembed._utils.folders import staged_file, staged_output


def test_outputs_are_created_with_the_users_umask(tmp_path):
    """Staged folders and files get the modes the user's umask gives, not tempfile's 0700."""
    old = os.umask(0o022)
    try:
        with staged_output(tmp_path / "out") as staging:
            (staging / "sub").mkdir()
            (staging / "sub" / "a.txt").write_text("a")
            fd = os.open(staging / "secretive.bin", os.O_CREAT | os.O_WRONLY, 0o600)
            os.close(fd)
        with staged_file(tmp_path / "table.md") as staging:
            staging.write_text("| a |\n")
    finally:
        os.umask(old)
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in [tmp_path / "out", *(tmp_path / "out").rglob("*"),
                                                             tmp_path / "table.md"]}
    assert modes == {"out": 0o755, "sub": 0o755, "a.txt": 0o644, "secretive.bin": 0o644, "table.md": 0o644}


def test_a_failed_file_write_leaves_the_old_file(tmp_path):
    """`report --out` and `card` write through staged_file: an error keeps the old file and leaves no temporary."""
    target = tmp_path / "table.md"
    target.write_text("old\n")
    with pytest.raises(RuntimeError):
        with staged_file(target) as staging:
            staging.write_text("half")
            raise RuntimeError("failed")
    assert target.read_text() == "old\n" and sorted(p.name for p in tmp_path.iterdir()) == ["table.md"]


def test_staged_file_without_overwrite_refuses_an_existing_file(tmp_path):
    """`report --out` writes with overwrite=False: an existing file is refused (checked under the lock) and kept."""
    target = tmp_path / "table.md"
    target.write_text("old\n")
    with pytest.raises(FileExistsError, match=r"table\.md already exists; choose another file or pass overwrite=True"):
        with staged_file(target, overwrite=False) as staging:
            staging.write_text("new")
    assert target.read_text() == "old\n" and sorted(p.name for p in tmp_path.iterdir()) == ["table.md"]
    with staged_file(tmp_path / "new.md", overwrite=False) as staging:
        staging.write_text("new\n")
    assert (tmp_path / "new.md").read_text() == "new\n"


def test_a_full_disk_while_writing_a_file_keeps_the_old_file(tmp_path):
    """ENOSPC half-way through a staged file: an OutputWriteError naming the file (not its temporary), the old
    file kept, no temporary or lock left."""
    import errno

    from hf_dumpembed._utils.atomic import OutputWriteError

    target = tmp_path / "README.md"
    target.write_text("old card\n")
    with pytest.raises(OutputWriteError) as raised:
        with staged_file(target) as staging:
            staging.write_text("half")
            raise OSError(errno.ENOSPC, "No space left on device", str(staging))
    assert str(raised.value).startswith(f"could not write {target}: no space is left on the device; free space")
    assert target.read_text() == "old card\n" and sorted(p.name for p in tmp_path.iterdir()) == ["README.md"]
