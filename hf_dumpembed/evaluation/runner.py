"""Run mteb on a DumpEmbed folder through the stock sentence-transformers wrapper and collect the table."""

from __future__ import annotations

import logging
import shutil
from dataclasses import dataclass
from pathlib import Path

from .._utils.tables import render_text
from .presets import DEFAULT_DATA_DIR, dataset_build_error, expand_task_names, official_task
from .results import TABLE_METRICS, EvalRow, eval_rows

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class EvalRun:
    """The rows of one run and where mteb filed them."""

    model_name: str
    revision: str
    results_folder: Path
    rows: list[EvalRow]

    def table(self) -> str:
        """A plain-text table: task, split, subset, nDCG@10, Recall@10, MRR@10."""
        header = ["task", "split", "subset", *TABLE_METRICS.values()]
        rows = [[row.task, row.split, row.subset, *(f"{row.scores.get(k, float('nan')):.4f}" for k in TABLE_METRICS)]
                for row in self.rows]
        return "\n".join([f"{self.model_name} @ {self.revision}", render_text(header, rows),
                          f"results: {self.results_folder}"])


def load_tasks(specs: list[str], data_dir: str | Path = DEFAULT_DATA_DIR) -> list:
    """mteb task objects for ``--task`` values (BEIR folders, local collections, groups, official names)."""
    from .local_task import beir_task

    return [beir_task(spec.folder, spec.split, name=spec.name) if spec.folder is not None else official_task(spec.name)
            for spec in expand_task_names(specs, data_dir)]


def _cached_for_other_data(cache, task, meta) -> bool:
    """True when ``cache`` holds a result of ``task`` for this model computed on another dataset revision."""
    try:
        existing = cache.load_task_result(task.metadata.name, meta)
    except Exception:  # unreadable result files are mteb's to report (it re-runs them)
        return False
    revision = getattr(task.metadata, "revision", None)
    return existing is not None and revision is not None and existing.dataset_revision != revision


def run_eval(
    model_dir: str | Path,
    tasks: list[str],
    results_dir: str | Path = "results",
    data_dir: str | Path = DEFAULT_DATA_DIR,
    model_name: str | None = None,
    revision: str | None = None,
    batch_size: int = 32,
    overwrite: bool = False,
    trust_remote_code: bool = False,
) -> EvalRun:
    """Evaluate ``model_dir`` on ``tasks`` with ``mteb.evaluate`` and mteb's stock
    ``SentenceTransformerEncoderWrapper``; results go to mteb's layout under
    ``results_dir/results/<org>__<name>/<revision>/`` with the model's full ``ModelMeta``.

    A DumpEmbed folder's remote code must be hf_dumpembed's own unless ``trust_remote_code`` (UntrustedRemoteCode);
    any other folder (a plain sentence-transformers model, a baseline) loads with ``trust_remote_code=False``, so
    sentence-transformers refuses whatever code it names. A run that fails leaves no results folder it created
    without writing a result into it."""
    from ..model.dumpembed_folder import require_consistent_dump_template, require_readable_weights
    from ..model.folder_schema import folder_code_may_run

    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer; got {batch_size!r}.")
    model_dir = Path(model_dir)
    if not (model_dir / "config.json").is_file():
        raise FileNotFoundError(f"{model_dir} is not a model folder (no config.json).")
    runs_code = folder_code_may_run(model_dir, trust_remote_code)
    require_readable_weights(model_dir)  # a damaged file: one error naming it, before mteb starts
    require_consistent_dump_template(model_dir)
    results = Path(results_dir).expanduser().absolute()
    created = [folder for folder in [results, *results.parents] if not folder.exists()]  # deepest first
    try:
        return _run_eval(model_dir, tasks, results_dir, data_dir, model_name, revision, batch_size, overwrite,
                         runs_code)
    except BaseException:  # a failed run leaves no folder it created with no file in it
        if created and created[-1].is_dir() and not any(path.is_file() for path in created[-1].rglob("*")):
            shutil.rmtree(created[-1], ignore_errors=True)
        raise


def _run_eval(model_dir: Path, tasks: list[str], results_dir: str | Path, data_dir: str | Path,
              model_name: str | None, revision: str | None, batch_size: int, overwrite: bool,
              runs_code: bool) -> EvalRun:
    """`run_eval` once its arguments and the folder's code are checked (``runs_code``: it may run)."""
    import mteb
    from datasets.exceptions import DatasetGenerationError
    from mteb.cache import ResultCache
    from mteb.models.sentence_transformer_wrapper import SentenceTransformerEncoderWrapper

    from .model_meta import SubmissionOptions, build_model_meta, is_dumpembed_folder, plain_model_meta

    task_objects = load_tasks(tasks, data_dir)  # fails fast on bad folders / offline official tasks
    options = SubmissionOptions(name=model_name, revision=revision)
    wrapper = SentenceTransformerEncoderWrapper(str(model_dir), revision=None, trust_remote_code=runs_code)
    if is_dumpembed_folder(model_dir):  # results are filed under the dimension evaluated
        wrapper.mteb_model_meta = build_model_meta(model_dir, options, strict=False, all_dims=False)
    else:
        wrapper.mteb_model_meta = plain_model_meta(model_dir, wrapper.model, options)
    meta = wrapper.mteb_model_meta
    cache = ResultCache(results_dir)
    # mteb reuses a complete cached result even when the task's dataset revision changed: a local folder's revision
    # is the hash of its files, so a task whose data was edited since its cached result is run again.
    stale = {task.metadata.name for task in task_objects if _cached_for_other_data(cache, task, meta)}
    if stale:
        logger.info("data changed since the cached results of %s: evaluating again", ", ".join(sorted(stale)))
    task_results = []
    for group, strategy in (([t for t in task_objects if t.metadata.name not in stale],
                             "always" if overwrite else "only-missing"),
                            ([t for t in task_objects if t.metadata.name in stale], "always")):
        if not group:
            continue
        try:
            task_results += mteb.evaluate(wrapper, group, cache=cache, overwrite_strategy=strategy,
                                          encode_kwargs={"batch_size": batch_size}).task_results
        except DatasetGenerationError as error:  # tasks finished before this one keep their result files
            raise dataset_build_error(error, [t.metadata.name for t in group]) from error
    folder = cache.cache_path / "results" / meta.model_name_as_path() / meta.revision
    return EvalRun(model_name=meta.name, revision=meta.revision, results_folder=folder, rows=eval_rows(task_results))
