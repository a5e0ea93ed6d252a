"""Any BEIR-style folder as an offline mteb retrieval task (``AbsTaskRetrieval`` with local ``load_data``)."""

from __future__ import annotations

import re
from pathlib import Path

from ..data.beir import BeirData, load_beir
from .fingerprint import beir_files_sha256


def task_name_for(folder: str | Path) -> str:
    """A task name from the folder name (letters, digits, ``_``, ``-``, ``.``)."""
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", Path(folder).resolve().name).strip("_")
    if not name:
        raise ValueError(f"cannot derive a task name from {folder!s}; pass name=...")
    return name


def beir_task(
    folder: str | Path,
    split: str = "test",
    name: str | None = None,
    description: str | None = None,
    language: str = "eng-Latn",
):
    """An mteb retrieval task over a BEIR-style folder (read and cross-checked now, so bad folders fail early).

    The task's ``dataset.revision`` is a sha256 of the data files themselves (never a manifest's claim), so a result
    file says which data it was computed on and an edited file's cached result is not reused.
    """
    from datasets import Dataset
    from mteb import TaskMetadata
    from mteb.abstasks.retrieval import AbsTaskRetrieval
    from mteb.abstasks.retrieval_dataset_loaders import RetrievalSplitData

    folder = Path(folder)
    data: BeirData = load_beir(folder, split)
    task_name = name or task_name_for(folder)
    metadata = TaskMetadata(
        name=task_name,
        description=description or f"Local BEIR-style retrieval folder {folder.name} ({split} split).",
        dataset={"path": str(folder.resolve()), "revision": beir_files_sha256(folder, split)},
        reference=None,
        type="Retrieval",
        category="t2t",
        modalities=["text"],
        eval_splits=[split],
        eval_langs=[language],
        main_score="ndcg_at_10",
        date=None,
        domains=None,
        task_subtypes=None,
        license=None,
        annotations_creators=None,
        dialect=[],
        sample_creation="found",
        bibtex_citation="",
    )

    def load_data(self, num_proc: int | None = None, **kwargs) -> None:  # noqa: ARG001 - mteb's signature
        if self.data_loaded:
            return
        doc_ids = list(data.corpus)
        corpus = Dataset.from_dict(
            {
                "id": doc_ids,
                "title": [data.corpus[d].get("title", "") for d in doc_ids],
                "text": [data.corpus[d]["text"] for d in doc_ids],
            }
        )
        query_ids = list(data.queries)
        queries = Dataset.from_dict({"id": query_ids, "text": [data.queries[q] for q in query_ids]})
        self.dataset = {
            "default": {
                split: RetrievalSplitData(
                    corpus=corpus, queries=queries, relevant_docs=data.qrels, top_ranked=None
                )
            }
        }
        self.data_loaded = True

    task_class = type(
        f"BeirTask_{re.sub(r'[^A-Za-z0-9_]', '_', task_name)}",
        (AbsTaskRetrieval,),
        {"metadata": metadata, "load_data": load_data, "__module__": __name__},
    )
    return task_class()
