"""Write output folders atomically: stage next to the target, move into place only when complete."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def check_output_dir(out_dir: str | Path, overwrite: bool) -> Path:
    """Refuse to write into an existing non-empty folder unless ``overwrite`` is set."""
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise FileExistsError(f"{out_dir} exists and is not a folder; choose another output path.")
    if out_dir.is_dir() and any(out_dir.iterdir()) and not overwrite:
        raise FileExistsError(
            f"{out_dir} already exists and is not empty; choose another output folder or pass overwrite=True "
            "(--overwrite on the command line) to replace it."
        )
    return out_dir


@contextmanager
def staged_output(out_dir: str | Path, overwrite: bool = False) -> Iterator[Path]:
    """Yield a staging folder; on success it replaces ``out_dir``, on error it is removed and ``out_dir`` kept."""
    out_dir = check_output_dir(out_dir, overwrite).resolve()
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.staging-", dir=out_dir.parent))
    try:
        yield staging
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    if out_dir.exists():
        shutil.rmtree(out_dir)
    staging.rename(out_dir)
