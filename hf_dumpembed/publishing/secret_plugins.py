"""detect-secrets plugins for what its stock set misses in a model folder (loaded by detect-secrets by file path).

``HuggingFaceTokenDetector``: Hugging Face access tokens (``hf_`` + 30 or more letters and digits), the credential a
model folder is most likely to leak. ``ProseKeywordDetector``: detect-secrets' keyword rules for configuration files
(``secret_key = value``, ``password: value``, no quotes needed) applied to files it has no rules for (Markdown
cards, plain text, Jinja templates), where the stock ``KeywordDetector`` only finds quoted values.
"""

from __future__ import annotations

import re
from typing import Any

from detect_secrets.plugins.base import RegexBasedDetector
from detect_secrets.plugins.keyword import CONFIG_DENYLIST_REGEX_TO_GROUP, KeywordDetector
from detect_secrets.util.filetype import FileType, determine_file_type

# A Hugging Face access token, without word boundaries: the byte scan (secret_bytes.py) looks for it in raw bytes,
# where the byte before or after a token is whatever the file holds there (a float's byte may be a letter).
HF_TOKEN = r"hf_[A-Za-z0-9]{30,}"
# Text files without a language (JSON, whose vocabularies map words like "password" to ids, is left to the stock rules).
PROSE_SUFFIXES = (".md", ".txt", ".jinja", ".gitattributes")


class HuggingFaceTokenDetector(RegexBasedDetector):
    """Hugging Face user access tokens."""

    secret_type = "Hugging Face Token"
    denylist = (re.compile(rf"\b{HF_TOKEN}\b"),)


class ProseKeywordDetector(KeywordDetector):
    """Keyword assignments (``aws_secret_access_key = ...``) in files of no programming or config language."""

    secret_type = "Secret Keyword in text"

    def analyze_line(self, filename: str, line: str, line_number: int = 0, context: Any = None,
                     **kwargs: Any) -> set:
        if determine_file_type(filename) is not FileType.OTHER or not filename.endswith(PROSE_SUFFIXES):
            return set()  # the stock KeywordDetector has this file type's own rules (JSON: quoted values only)
        return super(KeywordDetector, self).analyze_line(filename=filename, line=line, line_number=line_number,
                                                         context=context,
                                                         denylist_regex_to_group=CONFIG_DENYLIST_REGEX_TO_GROUP)
