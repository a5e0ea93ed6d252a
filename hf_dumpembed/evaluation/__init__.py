"""Evaluation: mteb retrieval tasks from BEIR folders, official task presets, runs, results, the folder's ModelMeta
and metrics on cached embeddings."""

from .local_task import beir_task
from .metrics import K_VALUES, retrieval_metrics
from .model_meta import build_model_meta, register_folder
from .presets import GROUPS, LOCAL_TASKS, LONGEMBED_TASKS, STANDARD_TASKS, expand_task_names
from .results import EvalRow, card_evaluation, load_results
from .runner import EvalRun, load_tasks, run_eval

__all__ = [
    "GROUPS",
    "K_VALUES",
    "LOCAL_TASKS",
    "LONGEMBED_TASKS",
    "STANDARD_TASKS",
    "EvalRow",
    "EvalRun",
    "beir_task",
    "build_model_meta",
    "card_evaluation",
    "expand_task_names",
    "load_results",
    "load_tasks",
    "register_folder",
    "retrieval_metrics",
    "run_eval",
]
