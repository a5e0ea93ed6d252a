"""WikiLong: the lead sentence of a Wikipedia article → the rest of the article (long documents).

Source: the English Wikipedia sample in gensim 4.4's test data
(``enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2``), read as XML without importing gensim.
Wikitext is reduced to plain text (templates, references, tables, files and categories removed; links to their
labels). Redirects, non-article pages and articles under ``MIN_DOCUMENT_CHARS`` of text are skipped.
"""

from __future__ import annotations

import bz2
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

from ..beir import PairCollection

MIN_DOCUMENT_CHARS = 2000
_COMMENT_RE = re.compile(r"<!--.*?-->", re.S)
_REF_RE = re.compile(r"<ref[^>/]*/>|<ref[^>]*>.*?</ref>", re.S | re.I)
_TAG_RE = re.compile(r"</?[a-zA-Z][^>]*>")
_FILE_LINK_RE = re.compile(
    r"\[\[(?:File|Image|Category|[a-z]{2,3}(?:-[a-z]+)?):[^\[\]]*(?:\[\[[^\]]*\]\][^\[\]]*)*\]\]", re.I
)
_LINK_RE = re.compile(r"\[\[(?:[^|\]]*\|)?([^\]]*)\]\]")
_EXT_LINK_RE = re.compile(r"\[(?:https?|ftp)://\S+\s*([^\]]*)\]")
_HEADING_RE = re.compile(r"^=+\s*(.*?)\s*=+\s*$", re.M)
_SENTENCE_END_RE = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(])")


def _remove_nested(text: str, opening: str, closing: str) -> str:
    """Remove balanced ``opening ... closing`` spans (templates ``{{ }}``, tables ``{| |}``), nesting allowed."""
    out, depth, i = [], 0, 0
    while i < len(text):
        if text.startswith(opening, i):
            depth += 1
            i += len(opening)
        elif depth and text.startswith(closing, i):
            depth -= 1
            i += len(closing)
        else:
            if depth == 0:
                out.append(text[i])
            i += 1
    return "".join(out)


def wikitext_to_text(wikitext: str) -> str:
    """Plain paragraphs of an article's wikitext."""
    text = _COMMENT_RE.sub("", wikitext)
    text = _REF_RE.sub("", text)
    text = _remove_nested(text, "{{", "}}")
    text = _remove_nested(text, "{|", "|}")
    text = _FILE_LINK_RE.sub("", text)
    text = _LINK_RE.sub(r"\1", text)
    text = _EXT_LINK_RE.sub(r"\1", text)
    text = _TAG_RE.sub("", text)
    text = _HEADING_RE.sub(r"\1.", text)
    text = text.replace("'''", "").replace("''", "")
    lines = [re.sub(r"^[*#:;]+\s*", "", line).strip() for line in text.splitlines()]
    paragraphs = re.split(r"\n{2,}", "\n".join(lines))
    return "\n\n".join(re.sub(r"\s+", " ", p).strip() for p in paragraphs if p.strip())


def iter_articles(dump: Path) -> Iterator[tuple[str, str, str]]:
    """(page id, title, wikitext) of every main-namespace, non-redirect page of a bz2 MediaWiki XML dump."""
    with bz2.open(dump, "rb") as handle:
        for _, element in ET.iterparse(handle):
            if not element.tag.endswith("}page"):
                continue
            ns_ = element.tag[: -len("page")]
            namespace = element.findtext(f"{ns_}ns")
            redirect = element.find(f"{ns_}redirect")
            text = element.findtext(f"{ns_}revision/{ns_}text") or ""
            if namespace == "0" and redirect is None and not text.lstrip().upper().startswith("#REDIRECT"):
                yield element.findtext(f"{ns_}id") or "", element.findtext(f"{ns_}title") or "", text
            element.clear()


def split_lead(text: str) -> tuple[str, str]:
    """(first sentence of the first paragraph, everything after it)."""
    first, _, rest = text.partition("\n\n")
    pieces = _SENTENCE_END_RE.split(first, maxsplit=1)
    lead = pieces[0].strip()
    remainder = " ".join(pieces[1:]).strip()
    return lead, (remainder + "\n\n" + rest).strip() if remainder else rest.strip()


def wikilong_pairs(dump: Path) -> tuple[dict[str, dict[str, str]], dict[str, str], dict[str, dict[str, int]]]:
    """Corpus, queries and qrels from the dump (page order; de-duplicated lead sentences)."""
    pairs = PairCollection()
    for page_id, _title, wikitext in iter_articles(dump):
        lead, rest = split_lead(wikitext_to_text(wikitext))
        if len(rest) >= MIN_DOCUMENT_CHARS and len(lead.split()) >= 5:
            pairs.add(f"enwiki-{page_id}", lead, rest)
    if not pairs.qrels:
        raise ValueError(f"{dump} holds no articles with at least {MIN_DOCUMENT_CHARS} characters of text.")
    return pairs.parts()
