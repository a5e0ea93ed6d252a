"""Checks of the repository itself: layout, docs, set-up, benchmarks records, the public API."""
