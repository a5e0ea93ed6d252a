"""Write output folders atomically: stage next to the target, move into place only when complete."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from .atomic import atomic_output, check_separate, current_umask, output_lock


def check_output_dir(out_dir: str | Path, overwrite: bool, inputs: Iterable[str | Path | None] = ()) -> Path:
    """Refuse to write into an existing non-empty folder unless ``overwrite`` is set, and an output that is,
    contains or lies inside one of ``inputs``."""
    out_dir = Path(out_dir)
    check_separate(out_dir, inputs)
    if out_dir.exists() and not out_dir.is_dir():
        raise FileExistsError(f"{out_dir} exists and is not a folder; choose another output path.")
    if out_dir.is_dir() and any(out_dir.iterdir()) and not overwrite:
        raise FileExistsError(
            f"{out_dir} already exists and is not empty; choose another output folder or pass overwrite=True "
            "(--overwrite on the command line) to replace it."
        )
    return out_dir


@contextmanager
def staged_output(out_dir: str | Path, overwrite: bool = False,
                  inputs: Iterable[str | Path | None] = ()) -> Iterator[Path]:
    """Yield a staging folder; on success it replaces ``out_dir``, on error it is removed and ``out_dir`` kept.

    One writer per output (a lock next to it; another run gets a clear error) and a swap that leaves the old or
    the new folder whole at every instant (see `hf_dumpembed._utils.atomic`).
    """
    out_dir = check_output_dir(out_dir, overwrite, inputs).resolve()
    with atomic_output(out_dir, inputs, check=lambda path: check_output_dir(path, overwrite)) as staging:
        yield staging


def check_new_file(path: Path) -> None:
    """Refuse an existing ``path`` (a file is replaced only when the caller was told to)."""
    if path.exists() or path.is_symlink():
        raise FileExistsError(f"{path} already exists; choose another file or pass overwrite=True (--overwrite on the "
                              "command line) to replace it.")


@contextmanager
def staged_file(path: str | Path, overwrite: bool = True) -> Iterator[Path]:
    """Yield a temporary file next to ``path``; on success it replaces ``path`` in one rename (with the user's
    umask), on error it is removed and ``path`` is what it was. One writer at a time (the output lock); with
    ``overwrite=False`` an existing ``path`` is refused (checked under the lock)."""
    path = Path(path).expanduser().absolute()
    if path.is_dir():
        raise IsADirectoryError(f"{path} is a folder; give a file path.")
    if not path.parent.is_dir():
        raise FileNotFoundError(f"{path.parent} does not exist: create it first, or give another path.")
    with output_lock(path):
        if not overwrite:
            check_new_file(path)  # under the lock: of two runs, the second one is refused
        fd, name = tempfile.mkstemp(prefix=f".{path.name}.staging-", dir=path.parent)
        os.close(fd)
        staging = Path(name)
        try:
            yield staging
            os.chmod(staging, 0o666 & ~current_umask())
            os.replace(staging, path)
        except BaseException:
            staging.unlink(missing_ok=True)
            raise
