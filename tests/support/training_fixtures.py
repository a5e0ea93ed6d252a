"""Small training data in every layout training reads, and a run-config helper for tiny models."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from hf_dumpembed.data.beir import write_beir
from tests.support.tiny_models import CORPUS

TEXTS = list(dict.fromkeys(CORPUS))  # the 15 distinct sentences


def toy_rows() -> list[dict[str, Any]]:
    """Query = a sentence's first words, positive = the sentence, negative = another sentence."""
    return [
        {"query": " ".join(text.split()[:3]), "positive": text, "negative": TEXTS[(i + 5) % len(TEXTS)]}
        for i, text in enumerate(TEXTS)
    ]


def write_jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")
    return path


def rlhn_rows() -> list[dict[str, Any]]:
    """The schema of rlhn/rlhn-100K (Tevatron): passages with docid, title, text."""
    return [
        {
            "query_id": str(i), "query": row["query"], "subset": "msmarco",
            "positive_passages": [{"docid": f"p{i}", "title": "Title", "text": row["positive"]}],
            "negative_passages": [{"docid": f"n{i}-{j}", "title": "", "text": TEXTS[(i + j + 1) % len(TEXTS)]}
                                  for j in range(3)],
        }
        for i, row in enumerate(toy_rows())
    ]


def mldr_rows() -> list[dict[str, Any]]:
    """The schema of Shitao/MLDR's train split: passages with docid and text only."""
    return [
        {
            "query_id": f"q-{i}", "query": row["query"],
            "positive_passages": [{"docid": f"doc-{i}", "text": row["positive"]}],
            "negative_passages": [{"docid": f"doc-{i + 100}", "text": row["negative"]}],
        }
        for i, row in enumerate(toy_rows())
    ]


def write_beir_folder(folder: Path) -> Path:
    corpus = {f"d{i}": {"title": "", "text": text} for i, text in enumerate(TEXTS)}
    queries = {f"q{i}": row["query"] for i, row in enumerate(toy_rows())}
    qrels = {f"q{i}": {f"d{i}": 1} for i in range(len(TEXTS))}
    return write_beir(folder, corpus, queries, qrels, split="train")


def run_config(backbone: Path, data: Path | dict[str, Any], out: Path, **training: Any) -> dict[str, Any]:
    """A tiny run: K=4, batch 4 (mini-batch 2), 1 hard negative, no warmup surprises."""
    hp = {"batch_size": 4, "mini_batch_size": 2, "learning_rate": 5e-3, "epochs": 1, "save_steps": 100,
          "logging_steps": 1, "warmup_ratio": 0.0}
    hp.update(training)
    return {
        "model": {"backbone": str(backbone), "num_dump_tokens": 4, "max_seq_length": 32},
        "data": data if isinstance(data, dict) else {"path": str(data)},
        "training": hp,
        "seed": 7,
        "output": str(out),
    }


class KillAfterSave(TrainerCallback):
    """Stop the run right after the checkpoint of ``step`` is written, as a kill (or Ctrl-C) would."""

    def __init__(self, step: int) -> None:
        self.step = step

    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if state.global_step == self.step:
            raise KeyboardInterrupt(f"killed after step {self.step}")


class StepsRan(TrainerCallback):
    """What one process did: the global step it started at and every optimizer step it ran itself."""

    def __init__(self) -> None:
        self.started_at: int | None = None
        self.steps: list[int] = []

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.started_at = state.global_step

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.steps.append(state.global_step)
