"""Training rows ``(anchor, positive, negative_1..n)`` from jsonl, a saved HF dataset, or a BEIR folder.

Layouts (``DataConfig.format``):

- ``jsonl`` / ``hf``: one row per line / per dataset row with an anchor, a positive and (optionally) hard
  negatives. Default columns: anchor = ``anchor`` or ``query``; positive = ``positive`` or ``pos``; negatives =
  ``negatives``, ``negative`` or ``neg`` (a string or a list of strings). ``columns:`` renames them.
- ``rlhn`` / ``mldr`` (the [DUMP] paper's data; both are Tevatron-style rows, jsonl or HF):
  ``{"query_id", "query", "positive_passages": [{"docid", "title", "text"}], "negative_passages": [...]}``.
  RLHN (``rlhn/rlhn-100K``) passages carry ``title`` and ``text``; MLDR (``Shitao/MLDR``, ``train``) passages
  only ``text``. Mapping: anchor = ``query``; positive = first positive passage; negatives = the first
  ``num_negatives`` negative passages; a passage's text is ``title + " " + text`` (just ``text`` without a title),
  as mteb joins BEIR documents.
- ``beir``: ``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv``: one row per judged (query, document) pair
  with score > 0; hard negatives are mined from the whole corpus by sentence-transformers'
  ``mine_hard_negatives`` (cached, so a resumed or repeated run does not mine again).

A malformed row is an error naming the file and line (or row); with ``lenient: true`` malformed rows are
counted, the first few reported, and the count recorded in the model's ``training/data_files.json``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import random
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .._utils.hashing import sha256_file
from ..data.beir import CORPUS_FILE, QUERIES_FILE, document_text, is_beir_folder, load_beir
from ..model.folder_schema import is_trusted_folder
from .config import DataConfig, MiningConfig

logger = logging.getLogger(__name__)

DEFAULT_COLUMNS = {
    "anchor": ("anchor", "query"),
    "positive": ("positive", "pos"),
    "negatives": ("negatives", "negative", "neg"),
}
TEVATRON_FORMATS = ("rlhn", "mldr")
_REPORTED_PROBLEMS = 5


class MalformedRow(ValueError):
    """One bad row; the message starts with ``file:line`` (or ``folder row N``)."""


@dataclass
class DataReport:
    """What one data source contributed (written to ``training/data_files.json``)."""

    name: str
    path: str
    format: str
    sha256: str
    num_rows: int
    files: list[dict[str, Any]]
    skipped_rows: int = 0
    skipped_examples: list[str] = field(default_factory=list)
    mining: dict[str, Any] | None = None

    def dataset_entry(self) -> dict[str, Any]:
        """The ``config.training_info["datasets"]`` entry."""
        return {"name": self.name, "path": self.path, "sha256": self.sha256, "num_rows": self.num_rows}


def _hash_files(files: list[Path], root: Path) -> tuple[str, list[dict[str, Any]]]:
    """Per-file sha256 and one combined hash (a single file's own hash when there is one file)."""
    entries = [{"path": str(f.relative_to(root)) if f != root else f.name, "sha256": sha256_file(f),
                "bytes": f.stat().st_size} for f in sorted(files)]
    if len(entries) == 1:
        return entries[0]["sha256"], entries
    return hashlib.sha256("".join(f"{e['path']}\0{e['sha256']}\n" for e in entries).encode()).hexdigest(), entries


def detect_format(path: Path) -> str:
    """``beir`` for a folder with corpus.jsonl, ``hf`` for a ``save_to_disk`` folder, ``jsonl`` for a file."""
    if path.is_file():
        return "jsonl"
    if is_beir_folder(path):
        return "beir"
    if (path / "dataset_info.json").exists() or (path / "dataset_dict.json").exists():
        return "hf"
    raise ValueError(
        f"{path}: cannot tell the data format: expected a .jsonl file, a BEIR folder (corpus.jsonl, queries.jsonl, "
        "qrels/) or a folder written by datasets' save_to_disk. Set data.format explicitly."
    )


def _text(value: Any, where: str, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise MalformedRow(f"{where}: {what} must be a non-empty string; got {value!r}.")
    return value


def _pick_column(row: dict[str, Any], role: str, columns: dict[str, str] | None, where: str, required: bool) -> Any:
    if columns and role in columns:
        if columns[role] not in row:
            raise MalformedRow(f"{where}: column {columns[role]!r} (the {role}) is missing; row keys: {sorted(row)}.")
        return row[columns[role]]
    for name in DEFAULT_COLUMNS[role]:
        if name in row:
            return row[name]
    if required:
        raise MalformedRow(
            f"{where}: no {role} column; expected one of {list(DEFAULT_COLUMNS[role])} (or map it with "
            f"data.columns.{role}); row keys: {sorted(row)}."
        )
    return None


def pair_row(row: dict[str, Any], config: DataConfig, where: str) -> list[str]:
    """[anchor, positive, negative_1..n] from a row in the generic anchor/positive/negatives layout."""
    anchor = _text(_pick_column(row, "anchor", config.columns, where, True), where, "the anchor")
    positive = _text(_pick_column(row, "positive", config.columns, where, True), where, "the positive")
    raw = _pick_column(row, "negatives", config.columns, where, config.num_negatives > 0)
    raw = [] if raw is None else [raw] if isinstance(raw, str) else raw
    if not isinstance(raw, list):
        raise MalformedRow(f"{where}: negatives must be a string or a list of strings; got {type(raw).__name__}.")
    if len(raw) < config.num_negatives:
        raise MalformedRow(f"{where}: {len(raw)} hard negative(s), but data.num_negatives={config.num_negatives}.")
    return [anchor, positive, *[_text(v, where, f"negative {i + 1}") for i, v in enumerate(raw[:config.num_negatives])]]


def _passage(value: Any, where: str, what: str) -> str:
    if not isinstance(value, dict) or not isinstance(value.get("text"), str):
        raise MalformedRow(f"{where}: {what} must be an object with a string \"text\"; got {value!r:.80}.")
    return _text(document_text({"title": value.get("title") or "", "text": value["text"]}), where, what)


def tevatron_row(row: dict[str, Any], config: DataConfig, where: str) -> list[str]:
    """[query, first positive passage, first n negative passages] from an RLHN / MLDR (Tevatron) row."""
    anchor = _text(row.get("query"), where, '"query"')
    positives = row.get("positive_passages")
    if not isinstance(positives, list) or not positives:
        raise MalformedRow(f'{where}: "positive_passages" must be a non-empty list of passages.')
    negatives = row.get("negative_passages") or []
    if not isinstance(negatives, list):
        raise MalformedRow(f'{where}: "negative_passages" must be a list of passages.')
    if len(negatives) < config.num_negatives:
        raise MalformedRow(f"{where}: {len(negatives)} negative passage(s), but data.num_negatives="
                           f"{config.num_negatives}.")
    return [anchor, _passage(positives[0], where, "positive_passages[0]"),
            *[_passage(n, where, f"negative_passages[{i}]") for i, n in enumerate(negatives[: config.num_negatives])]]


def _jsonl_objects(path: Path) -> Iterator[tuple[str, Any]]:
    """(``file:line``, parsed object or the JSON error) for each non-blank line."""
    from ..data.text_input import iter_utf8_lines

    for line_number, line in iter_utf8_lines(path):  # invalid UTF-8: an error naming the file and line
        if not line.strip():
            continue
        where = f"{path}:{line_number}"
        try:
            yield where, json.loads(line)
        except json.JSONDecodeError as error:
            yield where, MalformedRow(f"{where}: not valid JSON ({error.msg}).")


def _hf_objects(path: Path, split: str) -> Iterator[tuple[str, Any]]:
    import datasets

    loaded = datasets.load_from_disk(str(path))
    if isinstance(loaded, datasets.DatasetDict):
        if split not in loaded:
            raise ValueError(f"{path} has splits {sorted(loaded)}; data.split={split!r} is not one of them.")
        loaded = loaded[split]
    for index, row in enumerate(loaded):
        yield f"{path} row {index}", row


def _collect(objects: Iterator[tuple[str, Any]], convert: Any, config: DataConfig) -> tuple[list[list[str]], list[str]]:
    """(rows, problems): raises on the first malformed object, or counts them under ``lenient``."""
    rows: list[list[str]] = []
    problems: list[str] = []
    for where, obj in objects:
        try:
            if isinstance(obj, MalformedRow):
                raise obj
            if not isinstance(obj, dict):
                raise MalformedRow(f"{where}: expected a JSON object, got {type(obj).__name__}.")
            rows.append(convert(obj, config, where))
        except MalformedRow as error:
            if not config.lenient:
                raise MalformedRow(f"{error} (set data.lenient: true to skip and count malformed rows)") from None
            problems.append(str(error))
    return rows, problems


def _subset(rows: list[Any], config: DataConfig) -> list[Any]:
    if config.max_rows is None or config.max_rows >= len(rows):
        return rows
    keep = sorted(random.Random(config.sample_seed).sample(range(len(rows)), config.max_rows))
    return [rows[i] for i in keep]


def load_rows(config: DataConfig, mining_model: str | None = None, text_length: int | None = None,
              cache_dir: Path | None = None) -> tuple[list[list[str]], DataReport]:
    """Read one data source into rows ``[anchor, positive, negative_1..n]`` and its report (``text_length``: see
    `mine_negatives`)."""
    path = Path(config.path)
    if not path.exists():
        raise FileNotFoundError(f"Training data {path} does not exist.")
    fmt = detect_format(path) if config.format == "auto" else config.format
    name = config.name or path.name.removesuffix(".jsonl")
    if fmt == "beir":
        return _beir_rows(config, path, name, mining_model, text_length, cache_dir)
    objects = _jsonl_objects(path) if path.is_file() else _hf_objects(path, config.split)
    files = [path] if path.is_file() else [f for f in path.rglob("*") if f.is_file()]
    rows, problems = _collect(objects, tevatron_row if fmt in TEVATRON_FORMATS else pair_row, config)
    if problems:
        logger.warning("%s: skipped %d malformed row(s) (data.lenient: true); first: %s", path, len(problems),
                       "; ".join(problems[:_REPORTED_PROBLEMS]))
    rows = _subset(rows, config)
    if not rows:
        raise ValueError(f"{path} holds no usable training rows" +
                         (f" ({len(problems)} malformed)." if problems else "."))
    sha, entries = _hash_files(files, path)
    report = DataReport(name=name, path=str(path), format=fmt, sha256=sha, num_rows=len(rows), files=entries,
                        skipped_rows=len(problems), skipped_examples=problems[:_REPORTED_PROBLEMS])
    return rows, report


def _beir_rows(config: DataConfig, path: Path, name: str, mining_model: str | None, text_length: int | None,
               cache_dir: Path | None) -> tuple[list[list[str]], DataReport]:
    data = load_beir(path, config.split)
    pairs = [
        [data.queries[query_id], data.document_text(doc_id)]
        for query_id, judged in data.qrels.items()
        for doc_id, score in judged.items()
        if score > 0
    ]
    if not pairs:
        raise ValueError(f"{path}/qrels/{config.split}.tsv has no judgement with score > 0: no training pairs.")
    pairs = _subset(pairs, config)
    files = [path / CORPUS_FILE, path / QUERIES_FILE, path / "qrels" / f"{config.split}.tsv"]
    sha, entries = _hash_files(files, path)
    report = DataReport(name=name, path=str(path), format="beir", sha256=sha, num_rows=len(pairs), files=entries)
    if config.num_negatives == 0:
        return pairs, report
    model_name = config.mining.model or mining_model
    if model_name is None:
        raise ValueError("Mining hard negatives needs a model: set data.mining.model.")
    corpus = [data.document_text(doc_id) for doc_id in data.corpus]
    rows, mining = mine_negatives(pairs, corpus, config.mining, config.num_negatives, model_name, sha,
                                  text_length, cache_dir)
    if not rows:
        raise ValueError(f"{path}: hard negative mining kept no rows; loosen data.mining (range_max, relative_margin).")
    report.num_rows, report.mining = len(rows), mining
    return rows, report


def mine_negatives(pairs: list[list[str]], corpus: list[str], mining: MiningConfig, num_negatives: int,
                   model_name: str, data_sha256: str, text_length: int | None,
                   cache_dir: Path | None) -> tuple[list[list[str]], dict[str, Any]]:
    """``mine_hard_negatives`` on (anchor, positive) pairs, cached under ``cache_dir`` by a hash of every input.

    ``text_length`` is how many tokens of each text the trained model reads, its [DUMP] prefix left out (special
    tokens counted); the mining model reads the same text, plus its own [DUMP] prefix if it has one. So K = 0 and
    K > 0 runs that read the same text mine the same negatives. None keeps the mining model's own limit."""
    settings = {key: value for key, value in asdict(mining).items() if key not in ("cache_dir", "model")}
    settings.update(model=model_name, num_negatives=num_negatives, text_length=text_length)
    key = hashlib.sha256(json.dumps([settings, data_sha256, pairs], sort_keys=True).encode()).hexdigest()[:16]
    cache = (Path(mining.cache_dir) if mining.cache_dir else cache_dir)
    cache_file = cache / f"mined-{key}.jsonl" if cache else None
    info = {**settings, "input_pairs": len(pairs), "cache_key": key}
    if cache_file is not None and cache_file.exists():
        rows = [json.loads(line) for line in cache_file.read_text(encoding="utf-8").splitlines()]
        logger.info("Hard negatives: reusing %d mined rows from %s", len(rows), cache_file)
        return rows, {**info, "kept_rows": len(rows)}

    import torch
    from datasets import Dataset
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.util import mine_hard_negatives

    logger.info("Mining %d hard negative(s) for %d pairs over %d documents with %s", num_negatives, len(pairs),
                len(corpus), model_name)
    # Only a local folder of exactly the shape hf_dumpembed writes runs its (our) code; any other folder, and a Hub
    # id, loads with sentence-transformers' and transformers' own code only.
    model = SentenceTransformer(model_name, trust_remote_code=is_trusted_folder(model_name),
                                device="cpu" if not torch.cuda.is_available() else None)
    if text_length is not None:
        limit = text_length + dump_prefix_length(model)
        model.max_seq_length = min(model.max_seq_length or limit, limit)
    mined = mine_hard_negatives(
        Dataset.from_dict({"anchor": [p[0] for p in pairs], "positive": [p[1] for p in pairs]}),
        model, corpus=corpus, num_negatives=num_negatives, range_min=mining.range_min, range_max=mining.range_max,
        relative_margin=mining.relative_margin, sampling_strategy=mining.sampling_strategy,
        batch_size=mining.batch_size, output_format="n-tuple", verbose=False,
    )
    rows = [list(row.values()) for row in mined]
    if len(rows) < len(pairs):
        logger.warning("Hard negative mining kept %d of %d pairs (the others had too few candidates).", len(rows),
                       len(pairs))
    if cache_file is not None:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache_file.with_suffix(".tmp")
        tmp.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
        tmp.rename(cache_file)
    return rows, {**info, "kept_rows": len(rows)}


def dump_prefix_length(model: Any) -> int:
    """K of a sentence-transformers model whose first module wraps a DumpEmbed model; 0 for any other model."""
    config = getattr(getattr(model[0], "auto_model", None), "config", None)
    return int(getattr(config, "num_dump_tokens", 0) or 0)


def column_names(num_negatives: int) -> list[str]:
    """``anchor, positive, negative_1..n``: the trainer reads columns by position."""
    return ["anchor", "positive", *[f"negative_{i + 1}" for i in range(num_negatives)]]


def load_training_data(
    configs: tuple[DataConfig, ...], mining_model: str | None = None, text_length: int | None = None,
    cache_dir: Path | None = None,
) -> tuple[Any, list[DataReport]]:
    """All sources as one ``datasets.Dataset`` (columns `column_names`) and a report per source (``text_length``:
    see `mine_negatives`)."""
    from datasets import Dataset

    widths = {c.num_negatives for c in configs}
    if len(widths) > 1:
        raise ValueError(f"All data sources need the same num_negatives to be trained together; got {sorted(widths)}.")
    all_rows: list[list[str]] = []
    reports = []
    for config in configs:
        rows, report = load_rows(config, mining_model, text_length, cache_dir)
        all_rows.extend(rows)
        reports.append(report)
        logger.info("Data %s: %d rows (%s, %s)", report.name, report.num_rows, report.format, report.path)
    names = column_names(configs[0].num_negatives)
    return Dataset.from_dict({n: [r[i] for r in all_rows] for i, n in enumerate(names)}), reports
