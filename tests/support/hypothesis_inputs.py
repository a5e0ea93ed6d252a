"""Inputs of the property-based (hypothesis) tests: texts drawn from a small vocabulary and the settings that keep
them fast in the default run (small ``max_examples``, no deadline: the shared machine's timing varies)."""

from __future__ import annotations

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

WORDS = ["a", "man", "is", "eating", "food", "the", "girl", "riding", "horse", "open", "file", "read", "every",
         "line", "dense", "retrieval", "ranks", "passages", "by", "cosine", ".", ",", "hello", "world", "xyzzy"]
FIXTURE_SETTINGS = settings(max_examples=20, deadline=None,
                            suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
texts = st.lists(st.sampled_from(WORDS), min_size=1, max_size=14).map(" ".join)
