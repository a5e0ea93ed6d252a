"""Evaluation: mteb retrieval tasks from BEIR folders, official task presets, and metrics on cached embeddings."""

from .local_task import beir_task
from .metrics import K_VALUES, retrieval_metrics

__all__ = ["K_VALUES", "beir_task", "retrieval_metrics"]
