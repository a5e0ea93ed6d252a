"""Token groups of one tokenized text (the [DUMP] paper's Figure 2): [CLS]/BOS, each [DUMP_i], stopword tokens
(every token of a word in the stopword list), other text tokens, and trailing specials ([SEP]/EOS)."""

from __future__ import annotations

from dataclasses import dataclass

CLS = "cls"
STOPWORDS = "stopwords"
OTHER = "other"
SPECIAL = "special"


def dump_group(i: int) -> str:
    """Name of the group of the i-th [DUMP] token (1-based)."""
    return f"dump{i}"


@dataclass(frozen=True)
class TokenGroups:
    """Positions (into the unpadded sequence) of each group."""

    groups: dict[str, list[int]]

    def of(self, name: str) -> list[int]:
        return self.groups.get(name, [])


def group_tokens(
    text: str,
    offsets: list[tuple[int, int]],
    word_ids: list[int | None],
    special_mask: list[int],
    num_dump_tokens: int,
    dump_token_offset: int,
    stopwords: frozenset[str],
) -> TokenGroups:
    """Groups for one sequence as the model's tokenizer made it (no padding).

    The lead is ``dump_token_offset`` specials ([CLS]/BOS: group ``cls``) then the K [DUMP] tokens; later special
    tokens go to ``special``; a text token is a stopword token when its whole word (joined from the tokens that share
    its word id) lower-cased is in ``stopwords``.
    """
    groups: dict[str, list[int]] = {}
    if dump_token_offset:
        groups[CLS] = list(range(dump_token_offset))
    for i in range(num_dump_tokens):
        groups[dump_group(i + 1)] = [dump_token_offset + i]
    lead = dump_token_offset + num_dump_tokens
    spans: dict[int, tuple[int, int]] = {}
    for position, word in enumerate(word_ids):
        if position >= lead and word is not None and not special_mask[position]:
            start, end = offsets[position]
            old = spans.get(word, (start, end))
            spans[word] = (min(old[0], start), max(old[1], end))
    for position in range(lead, len(word_ids)):
        word = word_ids[position]
        if special_mask[position] or word is None:
            groups.setdefault(SPECIAL, []).append(position)
            continue
        start, end = spans[word]
        name = STOPWORDS if text[start:end].strip().lower() in stopwords else OTHER
        groups.setdefault(name, []).append(position)
    return TokenGroups(groups)
