"""What `hf-dumpembed quickstart` does and how much of it: the options and the two work budgets."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

from pydantic import Field, StrictInt

from .._utils.checked import checked_options
from ..data.corpora import EVAL_COLLECTIONS

DEFAULT_REPO_ID = "your-username/minilm-dump4-spectemp"


@dataclass(frozen=True)
class Budget:
    """How much each step does. ``steps=None`` trains one epoch over the rows that survive mining."""

    name: str
    train_rows: int
    batch_size: int
    mini_batch_size: int
    num_negatives: int
    steps: int | None
    max_seq_length: int  # tokens of text per input, special tokens included; a K > 0 model reads K more
    fit_max_texts: int | None
    projection_dim: int
    eval_max_queries: int | None
    eval_max_documents: int | None
    speed_texts: int
    speed_repeats: int
    decoder_max_queries: int
    decoder_max_documents: int
    decoder_max_seq_length: int
    decoder_speed_texts: int
    match_steps: int | None = None  # [DUMP]-row match before training; None = the builder's default (60)


DEFAULT_BUDGET = Budget(
    name="default", train_rows=320, batch_size=32, mini_batch_size=16, num_negatives=1, steps=None,
    max_seq_length=128, fit_max_texts=None, projection_dim=128, eval_max_queries=None, eval_max_documents=None,
    speed_texts=128, speed_repeats=3, decoder_max_queries=100, decoder_max_documents=174,
    decoder_max_seq_length=128, decoder_speed_texts=24,
)
FAST_BUDGET = Budget(
    name="fast", train_rows=64, batch_size=16, mini_batch_size=16, num_negatives=0, steps=4,
    max_seq_length=128, fit_max_texts=600, projection_dim=128, eval_max_queries=100, eval_max_documents=300,
    speed_texts=64, speed_repeats=1, decoder_max_queries=40, decoder_max_documents=80,
    decoder_max_seq_length=96, decoder_speed_texts=8, match_steps=5,
)


@checked_options({"num_dump_tokens": "--dump-tokens must be an integer >= 1 (the baseline is K = 0); got {value!r}."})
class QuickstartOptions:
    """Options of `hf-dumpembed quickstart`.

    Args:
        output_dir: where every model, result and plot goes (one sub-folder per step).
        num_dump_tokens: K of the [DUMP] model (the baseline is always K = 0).
        fast: the small budget (a few minutes) instead of the default one.
        decoder: also run SmolLM2-135M-Instruct zero-shot with PromptEOL, with and without EmbedFilter.
        data_dir: where the real-text collections are built or found (default ``OUTPUT_DIR/data``).
        repo_id: the Hub repo the dry-run push stages for.
        overwrite: redo every step instead of resuming.
        encoder / decoder_backbone: other backbones (default: the embedded all-MiniLM-L6-v2 / SmolLM2).
        budget: an explicit budget (overrides ``fast``; tests use a tiny one).
        progress: show progress bars.
    """

    output_dir: Path = Path("hf-dumpembed-quickstart")
    num_dump_tokens: Annotated[StrictInt, Field(ge=1)] = 4
    fast: bool = False
    decoder: bool = False
    data_dir: Path | None = None
    repo_id: str = DEFAULT_REPO_ID
    overwrite: bool = False
    encoder: str | None = None
    decoder_backbone: str | None = None
    budget: Budget | None = None
    eval_tasks: tuple[str, ...] = EVAL_COLLECTIONS  # held out: never trained or fitted on
    progress: bool = True
    seed: int = 0

    @property
    def work_budget(self) -> Budget:
        return self.budget or (FAST_BUDGET if self.fast else DEFAULT_BUDGET)

    @property
    def data_folder(self) -> Path:
        return self.data_dir or self.output_dir / "data"
