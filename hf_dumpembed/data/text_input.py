"""Read user text files with errors that name the file and line (non-UTF-8 bytes, a missing file)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path


def read_text_lines(path: str | Path) -> list[str]:
    """The lines of a UTF-8 text file; ValueError naming ``file:line`` and the byte offset of an invalid byte."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path} is not a file.")
    data = path.read_bytes()
    try:
        return data.decode("utf-8").splitlines()
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise ValueError(f"{path}:{line}: not UTF-8 (byte 0x{data[error.start]:02x} at offset {error.start}); "
                         "convert the file to UTF-8 (e.g. iconv -f latin1 -t utf-8).") from None


def iter_utf8_lines(path: str | Path) -> Iterator[tuple[int, str]]:
    """(line number, line with its ending) of a UTF-8 file; ValueError naming ``file:line`` on invalid bytes."""
    path = Path(path)
    with path.open("rb") as handle:
        for line_number, raw in enumerate(handle, start=1):
            try:
                yield line_number, raw.decode("utf-8")
            except UnicodeDecodeError as error:
                raise ValueError(f"{path}:{line_number}: not UTF-8 (byte 0x{raw[error.start]:02x} at column "
                                 f"{error.start + 1}); convert the file to UTF-8 (e.g. iconv -f latin1 -t utf-8)."
                                 ) from None
