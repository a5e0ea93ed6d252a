"""The real-text collections of the quickstart: built from local and Debian sources, or reused when present."""

from __future__ import annotations

import logging
from pathlib import Path

from .._utils.console import say
from ..data.beir import load_beir, write_beir
from ..data.corpora import COLLECTION, COLLECTIONS, build_datasets
from ..data.corpora.manifest import MANIFEST_FILE
from ..evaluation.cached import subsample

logger = logging.getLogger(__name__)

# The collections the quickstart knows (all but the long-input set) and the builder that writes each (StdlibCode's
# also writes StdlibCodeTrain).
BUILDER_OF = {c.name: c.builder for c in COLLECTIONS if not c.long_inputs}
# Collections the quickstart cannot run without (read from the local stdlib; no network).
REQUIRED = tuple(name for name in BUILDER_OF if COLLECTION[name].offline)


def is_built(folder: Path) -> bool:
    return (folder / MANIFEST_FILE).is_file()


def prepare_collections(data_dir: Path, names: list[str]) -> tuple[dict[str, Path], dict[str, str]]:
    """Build the missing collections among ``names`` into ``data_dir``.

    Returns the folders that are available and, for each optional collection that could not be built (e.g. no
    ``apt-get`` to fetch its Debian source), the reason. A required collection that cannot be built is an error.
    """
    unknown = [name for name in names if name not in BUILDER_OF]
    if unknown:
        raise ValueError(f"unknown collection {unknown[0]!r}; the quickstart knows {', '.join(BUILDER_OF)}.")
    skipped: dict[str, str] = {}
    for builder in dict.fromkeys(BUILDER_OF[name] for name in names if not is_built(data_dir / name)):
        try:
            build_datasets(data_dir, [builder])
        except (OSError, ValueError) as error:
            wanted = [name for name in names if BUILDER_OF[name] == builder]
            if any(name in REQUIRED for name in wanted):
                raise
            for name in wanted:
                skipped[name] = f"could not be built: {error}"
            say(f"        {', '.join(wanted)} skipped: {error}")
    available = {name: data_dir / name for name in names if is_built(data_dir / name)}
    for name in names:
        if name not in available and name not in skipped:
            skipped[name] = f"{data_dir / name} has no {MANIFEST_FILE} after building it"
    return available, skipped


def evaluation_folder(folder: Path, out: Path, max_queries: int | None, max_documents: int | None,
                      seed: int = 0) -> Path:
    """``folder`` itself, or a seeded sample of it written to ``out/<Name>-<Q>q<D>d`` when limits are given (the
    name, with the sample's real sizes, is the task's name in tables and results)."""
    if max_queries is None and max_documents is None:
        return folder
    data = subsample(load_beir(folder, "test"), max_queries, max_documents, seed)
    target = out / f"{folder.name}-{len(data.queries)}q{len(data.corpus)}d"
    if (target / "corpus.jsonl").is_file() and (target / "qrels" / "test.tsv").is_file():
        return target
    staging = target.with_name(target.name + ".partial")
    write_beir(staging, data.corpus, data.queries, data.qrels, split="test")
    staging.replace(target)
    logger.info("sampled %s: %d queries, %d documents", target, len(data.queries), len(data.corpus))
    return target
