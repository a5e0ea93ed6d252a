"""Token-level analysis: per-group norms and stopword attention ([DUMP] paper Fig. 2), the decoder logit lens
before/after EmbedFilter (EmbedFilter paper Fig. 1)."""

from .logit_lens import LogitLens, logit_lens
from .run import AnalysisResult, analyze, describe
from .stopwords import english_stopwords
from .token_stats import TokenStatistics, token_statistics
from .tokens import TokenGroups, group_tokens

__all__ = [
    "AnalysisResult",
    "LogitLens",
    "TokenGroups",
    "TokenStatistics",
    "analyze",
    "describe",
    "english_stopwords",
    "group_tokens",
    "logit_lens",
    "token_statistics",
]
