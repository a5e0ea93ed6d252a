"""Build the named collections into ``OUT/<Name>/`` (BEIR layout + ``manifest.json``) and summarise them."""

from __future__ import annotations

import dataclasses
import logging
import platform
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from tqdm.auto import tqdm

from ..beir import write_beir
from .catalog import BUILDER_NAMES, COLLECTION, Collection
from .manifest import DatasetSummary, write_manifest
from .manpages import manpages_pairs
from .pyfaq import pyfaq_pairs
from .sources import apt_extract, deb_version, gensim_wiki_dump
from .stdlib_code import collect_functions, split_stdlib, stdlib_root
from .wikilong import wikilong_pairs

logger = logging.getLogger(__name__)

MANPAGES_PACKAGE = "manpages-dev"
PYDOC_PACKAGE = "python3.11-doc"


def _write(collection: Collection, out: Path, triple, source: dict) -> DatasetSummary:
    """Write ``collection`` (its split; its query, document and use recorded in the manifest's source)."""
    corpus, queries, qrels = triple
    from ..._utils.folders import staged_output

    name, split = collection.name, collection.split
    source = {**source, "query": collection.query, "document": collection.document, "use": collection.use}
    counts = {"documents": len(corpus), "queries": len(queries), "judgements": sum(len(j) for j in qrels.values())}
    with staged_output(out / name, overwrite=True) as staging:  # a killed build keeps the previous collection
        write_beir(staging, corpus, queries, qrels, split=split)
        summary = write_manifest(name, staging, split, counts, source)
    return dataclasses.replace(summary, folder=out / name)


def build_manpages(out: Path, workdir: Path, apt_update: bool = True) -> list[DatasetSummary]:
    root = apt_extract(MANPAGES_PACKAGE, workdir / "apt-man", update=apt_update)
    source = {"package": MANPAGES_PACKAGE, "version": deb_version(workdir / "apt-man", MANPAGES_PACKAGE),
              "sections": ["man2", "man3"]}
    return [_write(COLLECTION["ManPages"], out, manpages_pairs(root / "usr/share/man"), source)]


def build_pyfaq(out: Path, workdir: Path, apt_update: bool = True) -> list[DatasetSummary]:
    root = apt_extract(PYDOC_PACKAGE, workdir / "apt-pydoc", update=apt_update)
    source = {"package": PYDOC_PACKAGE, "version": deb_version(workdir / "apt-pydoc", PYDOC_PACKAGE),
              "files": "html/_sources/faq/*.rst.txt"}
    return [_write(COLLECTION["PyFAQ"], out, pyfaq_pairs(root), source)]


def build_stdlib_code(out: Path, workdir: Path, apt_update: bool = True) -> list[DatasetSummary]:
    root = stdlib_root()
    splits = split_stdlib(collect_functions(root), test_queries=500, test_documents=3000, train_pairs=4000, seed=0)
    common = {"python": platform.python_version(), "stdlib": str(root), "seed": 0}
    test, train = COLLECTION["StdlibCode"], COLLECTION["StdlibCodeTrain"]
    return [
        _write(test, out, splits.test, {**common, "modules": splits.test_modules, "disjoint_from": train.name}),
        _write(train, out, splits.train, {**common, "modules": splits.train_modules, "disjoint_from": test.name}),
    ]


def build_wikilong(out: Path, workdir: Path, apt_update: bool = True) -> list[DatasetSummary]:
    dump, version = gensim_wiki_dump(workdir / "gensim")
    source = {"package": "gensim", "version": version, "file": dump.name}
    return [_write(COLLECTION["WikiLong"], out, wikilong_pairs(dump), source)]


Builder = Callable[[Path, Path, bool], list[DatasetSummary]]
# Builder name (a `Collection.builder`) -> the function; build_stdlib_code writes StdlibCode and StdlibCodeTrain.
_FUNCTIONS: dict[str, Builder] = {"ManPages": build_manpages, "PyFAQ": build_pyfaq, "StdlibCode": build_stdlib_code,
                                  "WikiLong": build_wikilong}
BUILDERS: dict[str, Builder] = {name: _FUNCTIONS[name] for name in BUILDER_NAMES}


def build_datasets(out: str | Path, names: Sequence[str] | None = None) -> list[DatasetSummary]:
    """Build ``names`` (default: all) into ``out``; raw sources go to a temporary folder that is deleted."""
    names = list(names) if names else list(BUILDERS)
    unknown = [n for n in names if n not in BUILDERS]
    if unknown:
        raise ValueError(f"unknown dataset {unknown[0]!r}; choose from {', '.join(BUILDERS)}.")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    summaries: list[DatasetSummary] = []
    apt_update = True
    with tempfile.TemporaryDirectory(prefix="hf_dumpembed-sources-") as tmp:
        for name in tqdm(names, desc="datasets", unit="set"):
            builder = BUILDERS[name]
            summaries.extend(builder(out, Path(tmp), apt_update))
            if builder in (build_manpages, build_pyfaq):
                apt_update = False  # one `apt-get update` per run is enough
    return summaries
