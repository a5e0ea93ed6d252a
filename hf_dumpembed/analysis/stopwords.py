"""The bundled English stopword list: NLTK's ``stopwords.words("english")`` (179 words), shipped as package data
so no download is needed (``data/english_stopwords.txt``)."""

from __future__ import annotations

from functools import lru_cache
from importlib.resources import files


@lru_cache(maxsize=1)
def english_stopwords() -> frozenset[str]:
    """NLTK's English stopwords, lower case."""
    text = files(__package__).joinpath("data/english_stopwords.txt").read_text(encoding="utf-8")
    return frozenset(line.strip() for line in text.splitlines() if line.strip())
