"""PyFAQ: a Python FAQ question → its answer, from the reStructuredText sources of the Python docs FAQ.

Source: Debian ``python3.11-doc``, ``usr/share/doc/python3.11/html/_sources/faq/*.rst.txt``. Every section heading
followed by text is a question; the text up to the next heading is its answer (light rst markup removed).
"""

from __future__ import annotations

import re
from pathlib import Path

from ..beir import PairCollection

FAQ_GLOB = "usr/share/doc/python3.*/html/_sources/faq/*.rst.txt"
_UNDERLINE_RE = re.compile(r"^([=\-~^\"'`#*+.:])\1{2,}\s*$")
_ROLE_RE = re.compile(r":[a-z:]+:`(?:[^`<]*<)?~?([^`>]*)>?`")
_PEP_RE = re.compile(r":pep:`(?:[^`<]*<)?(\d+)>?`")
_LINK_RE = re.compile(r"`([^`<]+?)\s*<[^>]*>`__?")
_LITERAL_RE = re.compile(r"``([^`]*)``")


def rst_to_text(lines: list[str]) -> str:
    """Plain text of rst lines: directives dropped, roles/links/literals reduced to their text."""
    kept = [line for line in lines if not line.lstrip().startswith(".. ")]
    text = " ".join(kept)
    text = _PEP_RE.sub(r"PEP \1", text)
    text = _ROLE_RE.sub(r"\1", text)
    text = _LINK_RE.sub(r"\1", text)
    text = _LITERAL_RE.sub(r"\1", text)
    text = text.replace("**", "").replace("::", ":")
    return re.sub(r"\s+", " ", text).strip()


def faq_sections(source: str) -> list[tuple[str, str]]:
    """(heading, body text) for every heading of an rst file that has body text before the next heading."""
    lines = source.splitlines()
    headings = [
        i
        for i in range(len(lines) - 1)
        if lines[i].strip()
        and _UNDERLINE_RE.match(lines[i + 1])
        and len(lines[i + 1].rstrip()) >= len(lines[i].rstrip())
        and not (i > 0 and _UNDERLINE_RE.match(lines[i - 1]))  # an overlined document title
    ]
    sections = []
    for start, end in zip(headings, [*headings[1:], len(lines)], strict=False):
        body = rst_to_text(lines[start + 2 : end])
        if body:
            sections.append((lines[start].strip(), body))
    return sections


def pyfaq_pairs(doc_root: Path) -> tuple[dict[str, dict[str, str]], dict[str, str], dict[str, dict[str, int]]]:
    """Corpus, queries and qrels from an unpacked ``python3.X-doc`` package (de-duplicated questions)."""
    files = sorted(doc_root.glob(FAQ_GLOB))
    if not files:
        raise FileNotFoundError(f"no FAQ sources matching {FAQ_GLOB} under {doc_root}.")
    pairs = PairCollection()
    for path in files:
        page = path.name.removesuffix(".rst.txt")
        for number, (question, answer) in enumerate(faq_sections(path.read_text(encoding="utf-8"))):
            if len(answer) >= 40 and len(question.split()) >= 3:
                pairs.add(f"{page}-{number:03d}", question, answer)
    return pairs.parts()
