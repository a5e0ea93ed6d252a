"""The one list of the real-text collections: each one's name, split, builder and role.

Every other list of collection names (the ``local`` task group, the quickstart's sets, the builders' choices, the
benchmark scripts) is derived from ``COLLECTIONS``. This module imports nothing, so the command line can read it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Collection:
    """One BEIR-style collection that ``build_datasets`` writes to ``OUT/<name>/``.

    Args:
        name: the folder's name and the task's name in results.
        split: its qrels split: ``test`` (held out: evaluation only) or ``train`` (training and projection fitting).
        builder: the ``BUILDERS`` entry whose run writes it (one builder may write several collections).
        use: what it is for, as its manifest records it.
        query / document: what a query and a relevant document are.
        offline: built from the running Python alone (no ``apt-get`` or download).
        long_inputs: a long-document set, outside the standard held-out trio the quickstart and benchmarks use.
    """

    name: str
    split: str
    builder: str
    use: str
    query: str
    document: str
    offline: bool = False
    long_inputs: bool = False

    @property
    def held_out(self) -> bool:
        """Never trained or fitted on."""
        return self.split == "test"


COLLECTIONS: tuple[Collection, ...] = (
    Collection("ManPages", "test", "ManPages", "evaluation", "NAME one-liner", "DESCRIPTION section"),
    Collection("PyFAQ", "test", "PyFAQ", "evaluation", "FAQ question", "answer"),
    Collection("StdlibCode", "test", "StdlibCode", "evaluation", "docstring first paragraph",
               "function source without its docstring", offline=True),
    Collection("StdlibCodeTrain", "train", "StdlibCode", "training and projection fitting only",
               "docstring first paragraph", "function source without its docstring", offline=True),
    Collection("WikiLong", "test", "WikiLong", "evaluation (long inputs)", "lead sentence", "rest of the article",
               long_inputs=True),
)
COLLECTION = {collection.name: collection for collection in COLLECTIONS}
# Every collection name, and the builder names in first-written order.
COLLECTION_NAMES = tuple(COLLECTION)
BUILDER_NAMES = tuple(dict.fromkeys(collection.builder for collection in COLLECTIONS))
# The held-out collections (the eval command's ``local`` group) and the standard trio among them (short inputs).
HELD_OUT = tuple(c.name for c in COLLECTIONS if c.held_out)
EVAL_COLLECTIONS = tuple(c.name for c in COLLECTIONS if c.held_out and not c.long_inputs)
# The one training collection (training data, projection fits and calibration text).
(TRAIN_COLLECTION,) = (c.name for c in COLLECTIONS if not c.held_out)

