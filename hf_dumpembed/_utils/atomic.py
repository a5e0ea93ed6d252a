"""Atomic, exclusive output folders: one writer per output, a whole old or a whole new folder at every instant.

A writer takes ``.<name>.lock`` next to the output (``fcntl.flock``: released by the kernel when the process dies,
so a killed run never blocks the next one), writes into ``.<name>.staging-*`` and then swaps it in: one
``renameat2(RENAME_EXCHANGE)`` where Linux and the filesystem support it, else rename the old folder aside
(``.<name>.replaced-*``), rename the new one in, delete the old one. The next writer of the same output first
recovers what a killed run left: an old folder set aside with no new one in place is renamed back, stale staging
and set-aside folders are deleted.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import fcntl
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

STAGING = ".staging-"
ASIDE = ".replaced-"
LOCK = ".lock"


class OutputBusy(FileExistsError):
    """Another run is writing the same output folder."""


def _fault_point(name: str) -> None:
    """Called at each step of a swap; tests replace it to kill the process there (fault injection)."""


def lock_path(out_dir: Path) -> Path:
    return out_dir.parent / f".{out_dir.name}{LOCK}"


_HELD: dict[Path, int] = {}  # locks this process holds (re-entrant: a command locks early, its writer again)


@contextmanager
def output_lock(out_dir: str | Path) -> Iterator[Path]:
    """Hold the exclusive lock of ``out_dir``; OutputBusy naming the other run when it is taken. Creates the
    parent folders, and removes those it created (if still empty) when released."""
    out_dir = Path(out_dir).expanduser().resolve()
    path = lock_path(out_dir)
    if path in _HELD:
        _HELD[path] += 1
        try:
            yield path
        finally:
            _HELD[path] -= 1
        return
    created = [p for p in [out_dir.parent, *out_dir.parent.parents] if not p.exists()]
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = _acquire(path, out_dir)
    except BaseException:
        _remove_empty(created)
        raise
    _HELD[path] = 1
    try:
        record = {"pid": os.getpid(), "command": " ".join(sys.argv)[:300],
                  "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(record).encode(), 0)
        yield path
    finally:
        del _HELD[path]
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        os.close(fd)  # releases the flock
        _remove_empty(created)


def _remove_empty(folders: list[Path]) -> None:
    for folder in folders:  # innermost first
        try:
            folder.rmdir()
        except OSError:
            break


def _acquire(path: Path, out_dir: Path) -> int:
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 4096, 0).decode("utf-8", "replace").strip()
            os.close(fd)
            try:
                who = json.loads(holder)
                who = f"pid {who['pid']}, `{who['command']}`, started {who['started']}"
            except (ValueError, KeyError, TypeError):
                who = "another process"
            raise OutputBusy(f"{out_dir} is being written by another run ({who}); wait for it to finish or choose "
                             "another output folder.") from None
        try:
            same = os.fstat(fd).st_ino == os.stat(path).st_ino
        except FileNotFoundError:
            same = False
        if same:  # not a lock file that its holder unlinked while we waited to open it
            return fd
        os.close(fd)


def recover(out_dir: Path) -> list[str]:
    """Under the lock: restore an old folder a killed swap set aside, delete stale staging / set-aside folders.
    Returns what was done (for the log)."""
    done = []
    parent = out_dir.parent
    asides = sorted(parent.glob(f".{out_dir.name}{ASIDE}*"), key=lambda p: p.stat().st_mtime, reverse=True)
    if asides and not out_dir.exists():
        asides[0].rename(out_dir)  # killed between "old aside" and "new in": the old folder is whole
        done.append(f"restored {out_dir} from {asides[0].name}")
        asides = asides[1:]
    for stale in [*asides, *parent.glob(f".{out_dir.name}{STAGING}*")]:
        shutil.rmtree(stale, ignore_errors=True)
        done.append(f"removed stale {stale.name}")
    return done


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap two paths with renameat2(RENAME_EXCHANGE); False where unsupported."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    return False  # EINVAL / ENOSYS (filesystem or kernel without it): fall back to rename aside


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
        out_dir.rename(aside)
        _fault_point("after-aside")
        staging.rename(out_dir)
        _fault_point("after-rename")
        shutil.rmtree(aside)
        return
    if out_dir.exists():
        out_dir.rmdir()  # an empty folder (or refused above by the caller's checks)
    staging.rename(out_dir)
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
