"""Atomic, exclusive outputs (fault injection): a writer killed at any step of the replace leaves the old or the
new folder whole and the next run cleans up; two writers of one output never both write; an output inside its
input (or the reverse) is refused; a failed command leaves nothing behind."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from hf_dumpembed._utils import atomic
from hf_dumpembed._utils.atomic import OutputBusy, check_separate, output_lock
from hf_dumpembed._utils.folders import check_output_dir, staged_output

REPO = Path(__file__).resolve().parents[2]

# A writer that replaces OUT (old: a.txt + b.txt = "old") with a new folder (a.txt + c.txt = "new"), killing itself
# with SIGKILL at the named step.
WRITER = textwrap.dedent(
    """
    import os, signal, sys
    from pathlib import Path
    from hf_dumpembed._utils import atomic
    from hf_dumpembed._utils.folders import staged_output

    out, point, exchange = Path(sys.argv[1]), sys.argv[2], sys.argv[3] == "exchange"
    def fault(name):
        if name == point:
            os.kill(os.getpid(), signal.SIGKILL)
    atomic._fault_point = fault
    if not exchange:
        atomic._exchange = lambda a, b: False
    with staged_output(out, overwrite=True) as staging:
        (staging / "a.txt").write_text("new")
        fault("mid-write")
        (staging / "c.txt").write_text("new")
    """
)
POINTS = ["mid-write", "before-swap", "after-exchange", "after-aside", "after-rename"]


def _write_old(out: Path) -> None:
    out.mkdir(parents=True)
    (out / "a.txt").write_text("old")
    (out / "b.txt").write_text("old")


def _state(out: Path) -> str:
    files = {p.name: p.read_text() for p in out.iterdir()} if out.is_dir() else {}
    if files == {"a.txt": "old", "b.txt": "old"}:
        return "old"
    if files == {"a.txt": "new", "c.txt": "new"}:
        return "new"
    return f"broken {files}"


def _leftovers(out: Path) -> list[str]:
    return sorted(p.name for p in out.parent.iterdir() if p.name.startswith(f".{out.name}."))


def _exchange_supported(tmp_path: Path) -> bool:
    a, b = tmp_path / "probe-a", tmp_path / "probe-b"
    a.mkdir()
    b.mkdir()
    return atomic._exchange(a, b)


def _run_writer(out: Path, point: str, mode: str) -> int:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-c", WRITER, str(out), point, mode], env=env, cwd=REPO,
                          capture_output=True, timeout=120).returncode


@pytest.mark.parametrize("mode", ["exchange", "rename-aside"])
@pytest.mark.parametrize("point", POINTS)
def test_a_kill_at_any_step_of_the_replace_leaves_a_whole_folder(tmp_path, point, mode):
    if mode == "exchange" and not _exchange_supported(tmp_path):
        pytest.skip("renameat2(RENAME_EXCHANGE) is not supported here; the rename-aside path is tested")
    out = tmp_path / "model"
    _write_old(out)
    code = _run_writer(out, point, mode)
    if (mode == "exchange" and point in ("after-aside", "after-rename")) or (
            mode == "rename-aside" and point == "after-exchange"):
        assert code == 0  # that step does not exist on this path: the writer finished
        assert _state(out) == "new"
        return
    assert code == -signal.SIGKILL
    # Right after the kill the folder is whole (old or new), or set aside whole when killed between the renames.
    state = _state(out)
    assert state in ("old", "new") or (point == "after-aside" and not out.exists())
    # The next writer recovers: the old folder back in place, stale staging / set-aside folders removed.
    with output_lock(out):
        atomic.recover(out)
    assert _state(out) in ("old", "new")
    assert _leftovers(out) == []
    expected = "new" if point in ("after-exchange", "after-rename") else "old"  # the swap is the commit point
    assert _state(out) == expected


def test_the_next_writer_recovers_and_writes(tmp_path):
    out = tmp_path / "model"
    _write_old(out)
    assert _run_writer(out, "after-aside", "rename-aside") == -signal.SIGKILL
    assert not out.exists()
    with staged_output(out, overwrite=True) as staging:
        (staging / "a.txt").write_text("new")
        (staging / "c.txt").write_text("new")
    assert _state(out) == "new" and _leftovers(out) == []


HOLDER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from hf_dumpembed._utils.folders import staged_output

    with staged_output(Path(sys.argv[1])) as staging:
        (staging / "a.txt").write_text("first")
        Path(sys.argv[2]).write_text("holding")
        time.sleep(60)
    """
)


def _start_holder(out: Path, ready: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(out), str(ready)], env=env, cwd=REPO)
    for _ in range(600):
        if ready.exists():
            return holder
        time.sleep(0.05)
    holder.kill()
    raise AssertionError("the holder never took the lock")


def test_two_writers_of_one_output_the_second_is_refused_naming_the_first(tmp_path):
    out, ready = tmp_path / "model", tmp_path / "ready"
    holder = _start_holder(out, ready)
    try:
        with pytest.raises(OutputBusy, match=f"being written by another run .pid {holder.pid}"):
            with staged_output(out) as staging:
                (staging / "a.txt").write_text("second")
        assert not out.exists()  # the second writer wrote nothing
    finally:
        holder.kill()
        holder.wait()
    # The kernel released the dead holder's lock: the next writer proceeds and cleans the holder's staging folder.
    with staged_output(out) as staging:
        (staging / "a.txt").write_text("third")
    assert (out / "a.txt").read_text() == "third" and _leftovers(out) == []


def test_a_writer_that_finishes_first_is_never_silently_replaced(tmp_path):
    out = tmp_path / "model"
    with staged_output(out) as staging:
        (staging / "a.txt").write_text("first")
    # A second run whose early check passed (before the first one wrote) re-checks under the lock.
    with pytest.raises(FileExistsError, match="already exists"):
        with atomic.atomic_output(out, check=lambda path: check_output_dir(path, overwrite=False)):
            pass
    assert (out / "a.txt").read_text() == "first"


def test_fit_refuses_an_output_locked_by_another_run(bert_dump_model, tmp_path):
    from hf_dumpembed.projections.fit import FitOptions, fit_projection

    out, ready = tmp_path / "fitted", tmp_path / "ready"
    holder = _start_holder(out, ready)
    try:
        with pytest.raises(OutputBusy):
            fit_projection(bert_dump_model, out, FitOptions(method="truncate", dim=8))
    finally:
        holder.kill()
        holder.wait()


@pytest.mark.parametrize("relation", ["inside", "same", "contains"])
def test_output_and_input_must_be_separate(tmp_path, relation):
    source = tmp_path / "src"
    source.mkdir()
    (source / "config.json").write_text("{}")
    out = {"inside": source / "inner", "same": source, "contains": tmp_path}[relation]
    with pytest.raises(ValueError, match="inside|must differ"):
        check_separate(out, [source])


def test_fit_into_its_own_source_is_refused_and_writes_nothing(bert_dump_model, tmp_path):
    from hf_dumpembed.cli import main
    from tests.support.card_fixtures import copy_model

    source = copy_model(bert_dump_model, tmp_path / "src")
    before = sorted(p.relative_to(source).as_posix() for p in source.rglob("*"))
    with pytest.raises(SystemExit, match="inside"):
        main(["fit", str(source), str(source / "inner"), "--method", "truncate", "--dim", "8", "--no-plots"])
    assert sorted(p.relative_to(source).as_posix() for p in source.rglob("*")) == before


def test_a_failed_write_leaves_nothing_behind(tmp_path):
    out = tmp_path / "new" / "nested" / "model"
    with pytest.raises(RuntimeError):
        with staged_output(out) as staging:
            (staging / "a.txt").write_text("half")
            raise RuntimeError("the command failed")
    assert not (tmp_path / "new").exists()


def test_export_with_a_failing_check_writes_nothing(bert_dump_model, tmp_path):
    from hf_dumpembed.export.stock import export_stock_st

    def refuse(staging: Path) -> None:
        assert (staging / "modules.json").exists()  # the check sees the complete export
        raise SystemExit("vectors differ")

    with pytest.raises(SystemExit):
        export_stock_st(bert_dump_model, tmp_path / "stock", check=refuse)
    assert not (tmp_path / "stock").exists() and _leftovers(tmp_path / "stock") == []


def _disk_failures() -> list:
    from safetensors import SafetensorError

    return [
        pytest.param(lambda file: OSError(errno.ENOSPC, "No space left on device", str(file)), errno.ENOSPC,
                     "no space is left on the device", id="ENOSPC"),
        pytest.param(lambda file: OSError(errno.EDQUOT, "Disk quota exceeded", str(file)), errno.EDQUOT,
                     "the disk quota is exceeded", id="EDQUOT"),
        pytest.param(lambda file: OSError(errno.EROFS, "Read-only file system", str(file)), errno.EROFS,
                     "the file system is read-only", id="EROFS"),
        pytest.param(lambda file: SafetensorError("Error while serializing: I/O error: No space left on device "
                                                  "(os error 28)"), errno.ENOSPC, "no space is left on the device",
                     id="safetensors-ENOSPC"),
    ]


@pytest.mark.parametrize(("failure", "code", "happened"), _disk_failures())
def test_a_full_disk_mid_write_is_one_clear_error_and_leaves_the_old_folder(tmp_path, failure, code, happened):
    """A full disk, an exceeded quota or a read-only file system half-way through a staged write is an
    OutputWriteError naming the output, the file (as named in the output) and what to do; the old output is whole."""
    out = tmp_path / "model"
    out.mkdir()
    (out / "a.txt").write_text("old")
    with pytest.raises(atomic.OutputWriteError) as raised:
        with staged_output(out, overwrite=True) as staging:
            (staging / "a.txt").write_text("half")
            raise failure(staging / "model.safetensors")
    message = str(raised.value)
    assert raised.value.errno == code and message.startswith(f"could not write {out.resolve()}: {happened}")
    assert "\n" not in message and ".staging-" not in message
    if isinstance(raised.value.__cause__, OSError):
        assert f"(while writing {out.resolve() / 'model.safetensors'})" in message
    assert message.endswith(f"{out.resolve()} is as it was (or still absent).")
    assert ("free space" in message) if code != errno.EROFS else ("writable file system" in message)
    assert (out / "a.txt").read_text() == "old" and sorted(p.name for p in out.iterdir()) == ["a.txt"]
    assert _leftovers(out) == []


def test_a_read_only_output_parent_is_one_clear_error(tmp_path, monkeypatch):
    """The lock file itself cannot be created (EROFS): the same OutputWriteError, naming the lock file, and the
    parent folders the call created are removed again."""
    real_open = os.open

    def read_only(path, flags, *args, **kwargs):
        if str(path).endswith(atomic.LOCK):
            raise OSError(errno.EROFS, "Read-only file system", str(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(atomic.os, "open", read_only)
    out = tmp_path / "new" / "model"
    with pytest.raises(atomic.OutputWriteError, match=r"the file system is read-only \(while writing .*\.model\.lock\);"
                       " choose an output on a writable file system"):
        with staged_output(out):
            pass
    assert not (tmp_path / "new").exists()


def test_other_errors_are_not_disk_errors(tmp_path):
    """Only ENOSPC, EDQUOT and EROFS are turned into OutputWriteError; another OSError stays itself."""
    with pytest.raises(PermissionError):
        with staged_output(tmp_path / "out"):
            raise PermissionError(errno.EACCES, "Permission denied", "x")
    assert atomic.disk_errno(RuntimeError("I/O error: No such file or directory (os error 2)")) is None
