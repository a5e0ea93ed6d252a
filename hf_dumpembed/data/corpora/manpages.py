"""ManPages: the NAME one-liner of a Linux man page (``manpages-dev`` man2 + man3) → its DESCRIPTION section.

Query = the text after ``\\-`` in NAME ("accept a connection on a socket"); document = the DESCRIPTION section as
plain text. Link pages (symlinks, ``.so`` includes) are skipped; a query text or document text that occurs more
than once is kept only for the first page in file-name order, so every query has exactly one relevant document.
"""

from __future__ import annotations

import gzip
import re
from collections.abc import Iterator
from pathlib import Path

from ..beir import PairCollection

SECTIONS = ("man2", "man3")
_ESCAPES = {
    r"\-": "-", r"\(em": "—", r"\(en": "–", r"\(aq": "'", r"\(dq": '"', r"\(lq": '"', r"\(rq": '"',
    r"\(bu": "•", r"\(mu": "×", r"\(<=": "<=", r"\(>=": ">=", r"\(ti": "~", r"\(ha": "^", r"\(rs": "\\",
    r"\e": "\\", r"\&": "", r"\~": " ", r"\ ": " ", r"\|": "", r"\^": "", r"\:": "", r"\%": "", r"\c": "",
}
_ESCAPE_RE = re.compile("|".join(re.escape(k) for k in sorted(_ESCAPES, key=len, reverse=True)))
_FONT_RE = re.compile(r"\\f(\[[^\]]*\]|\(..|.)")
_OTHER_ESCAPE_RE = re.compile(r"\\(\[[^\]]*\]|\(..|\*\(..|\*.)")
_ALTERNATING = {"BR", "RB", "BI", "IB", "IR", "RI"}
_TEXT_MACROS = {"B", "I", "SM", "SB", "SS", "IP", "TP", "UR", "MT"}


def _unescape(text: str) -> str:
    text = _FONT_RE.sub("", text)
    text = _ESCAPE_RE.sub(lambda m: _ESCAPES[m.group(0)], text)
    return _OTHER_ESCAPE_RE.sub("", text)


def _macro_args(rest: str) -> list[str]:
    """Split roff macro arguments: space-separated, double quotes group."""
    return [quoted if bare == "" else bare for quoted, bare in re.findall(r'"([^"]*)"|(\S+)', rest)]


def roff_to_text(lines: list[str]) -> str:
    """Plain text of roff source lines: macros resolved to their words, escapes replaced, tables dropped."""
    words: list[str] = []
    in_table = False
    for line in lines:
        if line.startswith(('.\\"', "'\\\"")):
            continue
        if line.startswith((".TS", ".TE")):  # a table starts / ends
            in_table = line.startswith(".TS")
            continue
        if in_table:
            continue
        if line.startswith((".", "'")):
            name, _, rest = line[1:].partition(" ")
            if name in _ALTERNATING:
                words.append("".join(_macro_args(rest)))
            elif name in _TEXT_MACROS and rest.strip():
                words.append(" ".join(_macro_args(rest)))
            continue
        words.append(line)
    return re.sub(r"\s+", " ", _unescape(" ".join(words))).strip()


def _sections(lines: list[str]) -> dict[str, list[str]]:
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in lines:
        if line.startswith(".SH"):
            title = _unescape(line[3:].strip().strip('"')).upper()
            current = sections.setdefault(title, [])
        elif current is not None:
            current.append(line)
    return sections


def parse_man_page(source: str) -> tuple[str, str] | None:
    """(NAME one-liner, DESCRIPTION text) of a man page's roff source, or None for a link/incomplete page."""
    if source.lstrip().startswith(".so "):
        return None
    sections = _sections(source.splitlines())
    if "NAME" not in sections or "DESCRIPTION" not in sections:
        return None
    name_line = roff_to_text(sections["NAME"])
    _, dash, summary = name_line.partition(" - ")
    description = roff_to_text(sections["DESCRIPTION"])
    if not dash or not summary.strip() or len(description) < 40:
        return None
    return summary.strip(), description


def iter_man_pages(man_root: Path) -> Iterator[tuple[str, str]]:
    """(page id like ``man2/accept``, roff source) for regular ``*.gz`` files of man2 and man3, in name order."""
    for section in SECTIONS:
        folder = man_root / section
        for path in sorted(folder.glob("*.gz")) if folder.is_dir() else []:
            if path.is_symlink() or not path.is_file():
                continue
            page_id = f"{section}/{path.name.removesuffix('.gz')}"
            yield page_id, gzip.decompress(path.read_bytes()).decode("utf-8", errors="replace")


def manpages_pairs(man_root: Path) -> tuple[dict[str, dict[str, str]], dict[str, str], dict[str, dict[str, int]]]:
    """Corpus, queries and qrels from an unpacked ``usr/share/man`` folder (de-duplicated, one positive each)."""
    pairs = PairCollection()
    seen_docs: set[str] = set()
    for page_id, source in iter_man_pages(man_root):
        parsed = parse_man_page(source)
        if parsed is not None and parsed[1] not in seen_docs and pairs.add(page_id, *parsed):
            seen_docs.add(parsed[1])
    if not pairs.qrels:
        raise ValueError(f"{man_root} holds no man2/man3 pages with NAME and DESCRIPTION sections.")
    return pairs.parts()
