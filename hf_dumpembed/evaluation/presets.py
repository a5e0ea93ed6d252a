"""Task names the ``eval`` command understands: BEIR folders, the locally built collections, the paper's official
MTEB tasks and named groups of them; with a clear error when an official task is not available offline."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..data.beir import is_beir_folder
from ..data.corpora import HELD_OUT

# The [DUMP] paper's evaluation: standard retrieval (WikipediaRetrievalMultilingual: English only)
# and LongEmbed.
STANDARD_TASKS = (
    "NQHardNegatives",
    "HotpotQAHardNegatives",
    "QuoraRetrievalHardNegatives",
    "DBPediaHardNegatives",
    "MSMARCOHardNegatives",
    "WikipediaRetrievalMultilingual",
)
LONGEMBED_TASKS = (
    "LEMBNarrativeQARetrieval",
    "LEMBQMSumRetrieval",
    "LEMBWikimQARetrieval",
    "LEMBSummScreenFDRetrieval",
    "LEMBNeedleRetrieval",
    "LEMBPasskeyRetrieval",
)
# LongEmbed tasks mteb loads from dwzhu/LongEmbed with one JSON Lines config per subset whose corpus / queries / qrels
# splits have different columns: `datasets` 5.x infers one schema from the first split and cannot build the others.
DWZHU_LONGEMBED_TASKS = tuple(name for name in LONGEMBED_TASKS if name != "LEMBPasskeyRetrieval")
# Official tasks run on one language subset only.
TASK_LANGUAGES = {"WikipediaRetrievalMultilingual": ["eng"]}
# The held-out collections built by scripts/build_datasets.py (data/corpora/catalog.py names them all).
LOCAL_TASKS = HELD_OUT
GROUPS = {
    "dump-standard": STANDARD_TASKS,
    "dump-longembed": LONGEMBED_TASKS,
    "dump-paper": STANDARD_TASKS + LONGEMBED_TASKS,
    "local": LOCAL_TASKS,
}
DEFAULT_DATA_DIR = Path("data")


@dataclass(frozen=True)
class TaskSpec:
    """A resolved task: a local BEIR folder (``folder``) or an official mteb task (``name``)."""

    name: str
    folder: Path | None = None
    split: str = "test"


def expand_task_names(specs: list[str], data_dir: str | Path = DEFAULT_DATA_DIR) -> list[TaskSpec]:
    """Resolve each ``--task`` value: a BEIR folder path, a local collection name (under ``data_dir``), a group
    (``dump-standard``, ``dump-longembed``, ``dump-paper``, ``local``) or an official mteb task name."""
    data_dir = Path(data_dir)
    unique: dict[tuple[str, Path | None], TaskSpec] = {}
    for spec in specs:
        for name in GROUPS.get(spec, (spec,)):
            task = _resolve_one(name, data_dir)
            unique.setdefault((task.name, task.folder), task)
    return list(unique.values())


def _resolve_one(spec: str, data_dir: Path) -> TaskSpec:
    path = Path(spec)
    if path.exists():
        if not path.is_dir() or not is_beir_folder(path):
            raise FileNotFoundError(f"{path} is not a BEIR-style folder (it needs corpus.jsonl, queries.jsonl and "
                                    "qrels/<split>.tsv).")
        return TaskSpec(name=path.resolve().name, folder=path)
    if spec in LOCAL_TASKS:
        folder = data_dir / spec
        if not is_beir_folder(folder):
            raise FileNotFoundError(f"{spec} is a local collection but {folder} is missing; build it with "
                                    f"`python scripts/build_datasets.py --out {data_dir} --only {spec}` in a checkout, "
                                    f"or in Python `hf_dumpembed.data.corpora.build_datasets({str(data_dir)!r}, "
                                    f"[{spec!r}])` (or pass --data-dir).")
        return TaskSpec(name=spec, folder=folder)
    import mteb

    try:
        mteb.get_task(spec)
    except (KeyError, ValueError):
        raise ValueError(
            f"unknown task {spec!r}: not a folder, not a local collection ({', '.join(LOCAL_TASKS)}), not a group "
            f"({', '.join(GROUPS)}) and not an mteb task name."
        ) from None
    return TaskSpec(name=spec)


def hub_offline() -> bool:
    """True when the Hugging Face Hub must not be contacted (``HF_HUB_OFFLINE`` / ``HF_DATASETS_OFFLINE``)."""
    from huggingface_hub import constants

    flags = (os.environ.get("HF_DATASETS_OFFLINE", ""), os.environ.get("HF_HUB_OFFLINE", ""))
    return bool(constants.HF_HUB_OFFLINE) or any(f.upper() in {"1", "TRUE", "YES", "ON"} for f in flags)


def dataset_is_cached(path: str, revision: str | None) -> bool:
    """Whether an official task's Hub dataset is in the local Hub cache (or the ``datasets`` cache)."""
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError

    try:
        snapshot_download(repo_id=path, repo_type="dataset", revision=revision, local_files_only=True)
        return True
    except (LocalEntryNotFoundError, FileNotFoundError, OSError, ValueError):
        pass
    from datasets import config as datasets_config

    return (Path(datasets_config.HF_DATASETS_CACHE) / path.replace("/", "___")).is_dir()


def official_task(name: str):
    """The mteb task object (one language subset where the paper used one); a clear error when offline and the
    task's dataset is not cached."""
    import mteb

    task = mteb.get_task(name, languages=TASK_LANGUAGES[name]) if name in TASK_LANGUAGES else mteb.get_task(name)
    dataset = task.metadata.dataset
    path, revision = dataset["path"], dataset.get("revision")
    if dataset_is_cached(path, revision):
        return task
    reason = "this machine is offline (HF_HUB_OFFLINE=1)" if hub_offline() else _hub_unreachable(path, revision)
    if reason:
        raise FileNotFoundError(
            f"mteb task {name} needs the Hub dataset {path} (revision {revision}), which is not in the local cache, "
            f"and {reason}. Run it once where the Hub is reachable (or copy the cache, HF_HOME), or evaluate on a "
            f"local BEIR folder instead (--task PATH or one of {', '.join(LOCAL_TASKS)})."
        )
    return task


def _hub_unreachable(path: str, revision: str | None) -> str | None:
    """None when the Hub answers for the dataset; otherwise why not (a short pre-flight request)."""
    from huggingface_hub import HfApi

    try:
        HfApi().dataset_info(path, revision=revision, timeout=15)
    except Exception as error:  # connection errors, DNS failures, HTTP errors: all mean "cannot download"
        return f"the Hub cannot be reached ({type(error).__name__})"
    return None


def dataset_build_error(error: Exception, task_names: list[str]) -> ValueError:
    """A clear error for a Hub dataset that ``datasets`` downloaded but could not build (``DatasetGenerationError``)."""
    cause = error.__cause__ or error
    message = f"`datasets` could not build a task's Hub dataset: {type(cause).__name__}: {str(cause).splitlines()[0]}"
    affected = [name for name in task_names if name in DWZHU_LONGEMBED_TASKS]
    if affected:
        message += (
            f". {', '.join(affected)} load dwzhu/LongEmbed, whose subsets keep corpus, queries and qrels (different "
            "columns) as splits of one JSON Lines config; the installed `datasets` infers one schema from the first "
            "split and fails on the others. Run the other tasks without them (e.g. --task LEMBPasskeyRetrieval), or "
            "evaluate these in an environment with a `datasets` release that loads that layout."
        )
    return ValueError(message)
