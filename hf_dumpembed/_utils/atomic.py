"""Atomic, exclusive output folders: one writer per output, a whole old or a whole new folder at every instant.

A writer holds ``.<name>.lock`` next to the output (a `filelock.FileLock`, taken without waiting), writes into
``.<name>.staging-*`` (`tempfile` in the parent) and swaps it in (`swap_into_place`); the next writer of the same
output first recovers what a killed run left (`recover`).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import json
import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from filelock import BaseFileLock, FileLock, Timeout, UnixFileLock, has_fcntl

STAGING = ".staging-"
ASIDE = ".replaced-"
LOCK = ".lock"
# A native lock (flock, LockFileEx) lets the holder write who it is into the lock file, after byte 0 (which
# LockFileEx keeps unreadable to others); filelock's SoftFileLock (no native lock) records the pid itself.
NATIVE_LOCK = sys.platform == "win32" or has_fcntl
RECORD_OFFSET = 1


class OutputBusy(FileExistsError):
    """Another run is writing the same output folder."""


class OutputWriteError(OSError):
    """An output could not be written: the disk is full, the quota exceeded or the file system read-only (its
    ``errno`` says which). Nothing was left behind and the old output is as it was."""

    def __str__(self) -> str:
        return str(self.strerror)  # the whole sentence, without OSError's "[Errno N] ...: 'file'" wrapping


# errno -> (what happened, what to do)
DISK_ERRORS = {
    errno.ENOSPC: ("no space is left on the device", "free space on it, or choose an output on another disk"),
    errno.EDQUOT: ("the disk quota is exceeded", "free space within your quota, or choose an output elsewhere"),
    errno.EROFS: ("the file system is read-only", "choose an output on a writable file system"),
}
_QUOTED_OS_ERROR = re.compile(r"\(os error (\d+)\)")  # how safetensors' Rust errors quote the OS error
_QUOTED_PATH = re.compile(r'at path "([^"]+)"')


def disk_errno(error: BaseException) -> int | None:
    """The errno of a full disk, exceeded quota or read-only file system behind ``error`` (an OSError, or an error
    of a library that quotes the OS error, as safetensors does); None for any other error."""
    if isinstance(error, OSError):
        code = error.errno
    else:
        match = _QUOTED_OS_ERROR.search(str(error))
        code = int(match[1]) if match else None
    return code if code in DISK_ERRORS else None


def failed_path(error: BaseException) -> str | None:
    """The file an OSError (or a safetensors error quoting its path) names, if any."""
    if isinstance(error, OSError) and error.filename is not None:
        return os.fsdecode(error.filename)
    match = _QUOTED_PATH.search(str(error))
    return match[1] if match else None


def disk_error_message(code: int, target: str | Path, file: str | None = None) -> str:
    """One line for a write to ``target`` (the output, or the file written) that failed with ``code``."""
    happened, to_do = DISK_ERRORS[code]
    where = f" (while writing {file})" if file and Path(file) != Path(target) else ""
    return f"could not write {target}: {happened}{where}; {to_do}."


def _shown_path(file: str, out_dir: Path) -> str:
    """``file`` as the user knows it: a path inside a staging folder (or the staging file) is shown under
    ``out_dir``."""
    path = Path(file)
    for folder in [path, *path.parents]:
        if folder.parent == out_dir.parent and folder.name.startswith(f".{out_dir.name}{STAGING}"):
            return str(out_dir / path.relative_to(folder))
    return file


def as_output_error(error: BaseException, out_dir: Path) -> OutputWriteError | None:
    """``error`` as an `OutputWriteError` of ``out_dir`` when a full disk, quota or read-only file system caused
    it; None otherwise."""
    code = disk_errno(error)
    if code is None or isinstance(error, OutputWriteError):
        return None
    file = failed_path(error)
    message = (disk_error_message(code, out_dir, file and _shown_path(file, out_dir))
               + f" {out_dir} is as it was (or still absent).")
    return OutputWriteError(code, message, file)


def _fault_point(name: str) -> None:
    """Called at each step of a swap; tests replace it to kill the process there (fault injection)."""


def _write_record(fd: int) -> None:
    """Write who holds the lock (pid, command, start) into its file, for the message a second run gets."""
    record = {"pid": os.getpid(), "command": " ".join(sys.argv)[:300],
              "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    os.ftruncate(fd, 0)
    os.lseek(fd, 0, os.SEEK_SET)
    os.write(fd, b"\n" + json.dumps(record).encode())


def _file_lock(path: Path) -> BaseFileLock:
    """The process's one lock object for ``path``, taken without waiting and re-entrant (a command locks its output
    early, its writer again)."""
    return FileLock(path, blocking=False, is_singleton=True, thread_local=False,
                    on_acquired=_write_record if NATIVE_LOCK else None)


def _holder(lock: BaseFileLock) -> str:
    """Who holds ``lock``: its record, else the pid filelock's marker names, else "another process"."""
    try:
        with open(lock.lock_file, "rb") as file:
            file.seek(RECORD_OFFSET)
            who = json.loads(file.read(4096))
        return f"pid {who['pid']}, `{who['command']}`, started {who['started']}"
    except (OSError, ValueError, KeyError, TypeError):
        pid = None if NATIVE_LOCK else getattr(lock, "pid", None)
        return f"pid {pid}" if pid else "another process"


@contextmanager
def output_lock(out_dir: str | Path) -> Iterator[Path]:
    """Hold the exclusive lock of ``out_dir``; OutputBusy naming the other run when it is taken. Creates the
    parent folders, and removes those it created (if still empty) when released. A full disk, exceeded quota or
    read-only file system while it is held (the lock's own file included) is an `OutputWriteError` naming
    ``out_dir``, raised after the cleanup."""
    out_dir = Path(out_dir).expanduser().resolve()
    try:
        with _locked(out_dir) as path:
            yield path
    except Exception as error:
        converted = as_output_error(error, out_dir)
        if converted is None:
            raise
        raise converted from error


@contextmanager
def _locked(out_dir: Path) -> Iterator[Path]:
    path = out_dir.parent / f".{out_dir.name}{LOCK}"
    lock = _file_lock(path)
    created = [] if lock.is_locked else [p for p in [out_dir.parent, *out_dir.parent.parents] if not p.exists()]
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    try:
        lock.acquire()
    except Timeout:
        remove_empty(created)
        raise OutputBusy(f"{out_dir} is being written by another run ({_holder(lock)}); wait for it to finish or "
                         "choose another output folder.") from None
    except BaseException:
        remove_empty(created)
        raise
    try:
        yield path
    finally:
        if lock.lock_counter == 1 and isinstance(lock, UnixFileLock):
            path.unlink(missing_ok=True)  # while held: a run that opened it meanwhile finds it unlinked, not taken
        lock.release()
        remove_empty(created)


def remove_empty(folders: list[Path]) -> None:
    """Remove ``folders`` (innermost first) up to the first that is not empty."""
    for folder in folders:
        try:
            folder.rmdir()
        except OSError:
            break


def recover(out_dir: Path) -> list[str]:
    """Under the lock: restore an old folder a killed swap set aside, delete stale staging / set-aside folders.
    Returns what was done (for the log)."""
    done = []
    parent = out_dir.parent
    asides = sorted(parent.glob(f".{out_dir.name}{ASIDE}*"), key=lambda p: p.stat().st_mtime, reverse=True)
    if asides and not out_dir.exists():
        os.replace(asides[0], out_dir)  # killed between "old aside" and "new in": the old folder is whole
        done.append(f"restored {out_dir} from {asides[0].name}")
        asides = asides[1:]
    for stale in [*asides, *parent.glob(f".{out_dir.name}{STAGING}*")]:
        shutil.rmtree(stale, ignore_errors=True)
        done.append(f"removed stale {stale.name}")
    return done


def _exchange(a: Path, b: Path) -> bool:
    """Swap two folders in one atomic step with Linux's renameat2(RENAME_EXCHANGE) (``os.replace`` cannot replace a
    non-empty folder); False where the kernel, libc or file system lacks it."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        renameat2 = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True).renameat2
    except (OSError, AttributeError):
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    at_cwd, rename_exchange = -100, 2  # AT_FDCWD, RENAME_EXCHANGE
    return renameat2(at_cwd, os.fsencode(a), at_cwd, os.fsencode(b), rename_exchange) == 0


def swap_into_place(staging: Path, out_dir: Path) -> None:
    """Make the complete ``staging`` folder ``out_dir``; a kill at any point leaves the old or the new folder."""
    _fault_point("before-swap")
    if out_dir.is_dir() and any(out_dir.iterdir()):
        if _exchange(staging, out_dir):
            _fault_point("after-exchange")
            shutil.rmtree(staging)  # now the old folder
            return
        aside = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}{ASIDE}", dir=out_dir.parent))
        aside.rmdir()
        os.replace(out_dir, aside)
        _fault_point("after-aside")
        os.replace(staging, out_dir)
        _fault_point("after-rename")
        shutil.rmtree(aside)
        return
    if out_dir.exists():
        out_dir.rmdir()  # an empty folder (or refused above by the caller's checks)
    os.replace(staging, out_dir)
    _fault_point("after-rename")


def _inside(inner: Path, outer: Path) -> bool:
    return inner == outer or outer in inner.parents


def check_separate(out_dir: str | Path, inputs: Iterable[str | Path | None]) -> None:
    """Refuse an output that is, contains or lies inside one of the inputs (they would be overwritten or read
    while being replaced)."""
    out = Path(out_dir).expanduser().resolve()
    for given in inputs:
        if given is None or not Path(given).expanduser().exists():
            continue  # Hub ids, embedded:* names
        source = Path(given).expanduser().resolve()
        if out == source:
            raise ValueError(f"the output {out_dir} must differ from the input {given}, which is only read: choose "
                             "an output folder elsewhere.")
        if _inside(out, source):
            raise ValueError(f"the output {out_dir} is inside (or is) the input {given}, which is only read: choose "
                             "an output folder elsewhere.")
        if _inside(source, out):
            raise ValueError(f"the input {given} lies inside the output {out_dir}, which would be replaced: choose "
                             "an output folder that does not contain the input.")


def current_umask() -> int:
    """The process's umask (read from /proc where it can be, so that it is never changed, even for an instant)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def apply_umask(folder: Path) -> None:
    """Give ``folder`` and everything in it the modes a plain ``mkdir``/``open`` would have given them under the
    user's umask (``tempfile`` creates 0700 folders and some writers 0600 files, whatever the umask)."""
    mask = current_umask()
    for directory, _dirs, files in os.walk(folder):
        os.chmod(directory, 0o777 & ~mask)
        for name in files:
            path = Path(directory) / name
            if not path.is_symlink():
                executable = path.stat().st_mode & 0o100
                os.chmod(path, (0o777 if executable else 0o666) & ~mask)


@contextmanager
def atomic_output(out_dir: str | Path, inputs: Iterable[str | Path | None] = (),
                  check: Callable[[Path], object] | None = None) -> Iterator[Path]:
    """Lock ``out_dir``, recover what a killed run left, run ``check(out_dir)`` (e.g. "exists and not empty")
    under the lock, yield a fresh staging folder and swap it in on success. On error the staging folder (and any
    parent folders this call created) is removed and ``out_dir`` is what it was."""
    out_dir = Path(out_dir).expanduser().resolve()
    check_separate(out_dir, inputs)
    with output_lock(out_dir):
        recover(out_dir)
        if check is not None:
            check(out_dir)
        staging = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}{STAGING}", dir=out_dir.parent))
        try:
            yield staging
            apply_umask(staging)
            swap_into_place(staging, out_dir)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            recover(out_dir)  # a swap that failed half-way: the old folder goes back in place
            raise
