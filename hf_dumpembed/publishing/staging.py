"""Stage a copy of a model folder for upload, with its model card rendered for the target repo id.

The source folder is never modified: every file is copied (a PNG with its image chunks only), and the card
(README.md) is (re-)rendered in the copy when it is missing or its snippets load another id than the repo pushed to.
A card that already loads the repo id is kept byte for byte (it may pin a revision or show an evaluation table).
"""

from __future__ import annotations

import re
from pathlib import Path

from ..model.folder_schema import FolderShape
from .push_checks import card_model_id, folder_kind
from .staging_safety import scan_folder, stage_verified

EVALUATION_HEADING = re.compile(r"^## Evaluation\s*$", re.MULTILINE)


def card_needs_rendering(folder: Path, repo_id: str) -> str | None:
    """Why the card in ``folder`` must be rendered for ``repo_id`` (None when it already loads ``repo_id``)."""
    card = folder / "README.md"
    if not card.exists():
        return "the folder has no README.md"
    loads = card_model_id(card.read_text())
    if loads != repo_id:
        return f"its snippets loaded {loads!r}" if loads else "it had no usage snippets"
    return None


def stage_for_repo(folder: str | Path, staging: Path, repo_id: str, source: str | Path | None = None,
                   results_dir: str | Path | None = None, results_model: str | None = None) -> str:
    """Copy every file of ``folder`` into ``staging`` and render the card there for ``repo_id`` when needed; returns
    the report line saying whether the card was kept or rendered, and why.

    ``source`` is the DumpEmbed folder of a stock export (its card is rendered from it); ``results_dir`` holds the
    mteb results for the card's evaluation table (``results_model`` picks the model there; by default the one
    named like ``repo_id`` or like ``staging``'s folder name, so name it after the source folder). Raises
    ValueError when re-rendering would silently drop the evaluation table of the existing card (pass
    ``results_dir``) or a stock export has no ``source``.
    """
    folder = Path(folder)
    stage_verified(folder, scan_folder(folder).files, staging, link_weights=False)  # its links: refused by the caller
    reason = card_needs_rendering(staging, repo_id)
    if reason is None:
        return f"model card kept for the target repo (it already loads {repo_id})"
    old = staging / "README.md"
    if results_dir is None and old.exists() and EVALUATION_HEADING.search(old.read_text()):
        raise ValueError(f"the card of {folder} shows an evaluation table, and rendering it for {repo_id} needs the "
                         f"results again: pass --results DIR (as given to `hf-dumpembed card`).")
    if folder_kind(staging) is FolderShape.STOCK and source is None:
        raise ValueError(f"{folder} is a stock export whose card must be rendered for {repo_id} ({reason}): pass "
                         "--source with the DumpEmbed folder it was exported from.")
    from ..evaluation.results import card_evaluation
    from ..model.card import write_card

    evaluation = None if results_dir is None else card_evaluation(results_dir, staging, repo_id, results_model)
    old.unlink(missing_ok=True)  # a copy, never the source folder's file (see stage_verified)
    write_card(staging, model_id=repo_id, evaluation=evaluation, source=source)
    return f"model card rendered for the target repo ({reason})"
