"""Render a model card (the folder's README.md) from the package's template (``hf_dumpembed/model_cards/``) and the
folder's own files.

Only what the folder holds is shown: a section whose data is missing is left out, never filled with a
placeholder.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from huggingface_hub import ModelCard, ModelCardData

from .._utils.tables import render_markdown
from ..data.assets import EMBEDDED_MODELS
from ..remote.configuration_dumpembed import POOLING_DESCRIPTIONS
from .backbone import is_decoder_folder
from .embeddings import INIT_CARD_TEXT, DumpInit
from .export_record import check_export_source
from .exportable import stock_export_blocker
from .folder_schema import TRAINING_SIDE_FILES
from .papers import PAPERS
from .projection_record import AutoRecord, ProjectionInfo

TEMPLATE = Path(__file__).resolve().parent.parent / "model_cards" / "dumpembed.md"
_HUB_ID = re.compile(r"^[\w.-]+/[\w.-]+$")
# The card's words for each init a folder records (``auto`` is resolved before: `resolve_init`); ``token`` is
# recorded as ``token:X``, X the copied token.
INIT_TEXT = INIT_CARD_TEXT  # the card's words for each recorded init mode (defined with the modes)


def check_repo_id(repo_id: str, what: str = "REPO_ID") -> str:
    """``repo_id`` when it is a Hub repo id ``owner/name`` (huggingface_hub's rules: letters, digits, ``-``, ``_``,
    ``.``, at most 96 characters); a ValueError naming ``what`` otherwise. `push` and `card --model-id` both use it."""
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    try:
        validate_repo_id(repo_id)
    except HFValidationError as error:
        raise ValueError(f"{what} {repo_id!r} is not a valid Hub repo id: {error}") from None
    if "/" not in repo_id:
        raise ValueError(f"{what} must be 'owner/name' (your user or organisation, then the model name); got "
                         f"{repo_id!r}.")
    return repo_id


_REVISION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]*$")


def check_revision(revision: str, what: str = "--revision") -> str:
    """``revision`` when it is a commit sha or a branch / tag name (letters, digits, ``.``, ``_``, ``/``, ``-``; no
    ``..``), as the card's snippets paste it; a ValueError naming ``what`` otherwise."""
    if not _REVISION.match(revision) or ".." in revision or len(revision) > 256:
        raise ValueError(f"{what} {revision!r} is not a commit sha or a branch / tag name (letters, digits, '.', '_', "
                         "'/', '-'): give the commit sha `push` printed.")
    return revision


def recorded_init_text(init: str) -> str | None:
    """`INIT_TEXT` of a recorded init: ``token:X`` names its token; None for a value no init records."""
    name, colon, token = init.partition(":")
    texts = {mode.value: text for mode, text in INIT_TEXT.items()}
    if name not in texts or bool(colon) != (name == DumpInit.TOKEN.value):
        return None
    return texts[name].format(token=token) if colon else texts[name]


def init_text(dump_init: str | None) -> str | None:
    """The card's words for a ``dump_init`` value (``token:X`` = an exact copy of token X's row; a ``+matchN``
    suffix = the rows then fitted for N steps to reproduce the K = 0 source, `build --match-steps`)."""
    init, _, match_steps = (dump_init or "").partition("+match")
    text = recorded_init_text(init)
    if text and match_steps:
        text += (f", then fitted for {match_steps} steps (backbone frozen) so every text token's final state matches "
                 "the model without [DUMP] tokens")
    return text
CITATIONS = "\n".join(PAPERS.values())  # BibTeX of the three papers

# projection_info key -> label, in the order the card lists them.
PROJECTION_FIELDS = {
    "mode": "mode",
    "input": "input",
    "prompt": "zero-shot prompt",
    "dim": "output dimension k",
    "route": "route at k (auto mode)",
    "gamma": "γ",
    "reference_gamma": "reference rule's γ at k",
    "knee": "knee (SNR rank)",
    "ratio": "filter ratio τ",
    "seed": "seed",
    "fitted_at": "fitted",
}
TRAINING_FIELDS = {"loss": "loss", "steps": "steps", "seed": "seed", "trained_at": "trained"}


def _read_json(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text()) if path.exists() else {}


def _present(value: Any) -> bool:
    """True for a value worth a table row (None, empty strings and empty containers are left out)."""
    return value is not None and value != "" and value != [] and value != {}


def _fmt(value: Any) -> str:
    """A metadata value as table text: floats to 4 significant digits, containers as compact JSON."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, (dict, list)):
        return "`" + json.dumps(value, separators=(", ", ": ")) + "`"
    return str(value).replace("|", "\\|")


def _rows(info: dict[str, Any], fields: dict[str, str]) -> list[tuple[str, str]]:
    return [(label, _fmt(info[key])) for key, label in fields.items() if _present(info.get(key))]


def is_hub_dataset(dataset: dict[str, Any]) -> bool:
    """A training dataset is a Hub dataset when its name is ``owner/name`` and its path is that id (not a folder)."""
    name = str(dataset.get("name") or "")
    path = str(dataset.get("path") or "")
    if not _HUB_ID.match(name) or Path(name).exists():
        return False
    return path in ("", name) or path.startswith(("hf://datasets/", "datasets/"))


def prefix_template(model_dir: Path) -> str:
    """The tokenizer's single-input template from tokenizer.json, e.g. ``[CLS] [DUMP1] [DUMP2] $A [SEP]``."""
    processor = _read_json(model_dir / "tokenizer.json").get("post_processor") or {}
    if processor.get("type") == "Sequence":
        processor = next((p for p in processor["processors"] if p.get("type") == "TemplateProcessing"), {})
    pieces = []
    for piece in processor.get("single", []):
        if "SpecialToken" in piece:
            pieces.append(piece["SpecialToken"]["id"])
        elif "Sequence" in piece:
            pieces.append("$" + piece["Sequence"]["id"])
    return " ".join(pieces).replace("$A", "text")


def read_dump_config(model_dir: Path) -> dict[str, Any]:
    """The folder's config.json; a clear error when it is not a DumpEmbed model."""
    config = _read_json(model_dir / "config.json")
    if config.get("model_type") != "dumpembed":
        raise ValueError(f"{model_dir} is not a DumpEmbed model folder (config.json model_type must be 'dumpembed').")
    return config


def plot_images(model_dir: Path, listed: list[str]) -> list[tuple[str, str]]:
    """(caption, relative path) of the PNG plots in ``model_dir/plots``: those ``listed`` first, then the rest."""
    existing = sorted(p.relative_to(model_dir).as_posix() for p in (model_dir / "plots").glob("*.png"))
    ordered = [p for p in listed if p in existing] + [p for p in existing if p not in listed]
    return [(Path(p).stem.replace("_", " ").replace("-", " "), p) for p in ordered]


def selectable_dims(info: ProjectionInfo) -> list[int]:
    """Output dimensions a user may pick at load time (``projection_dim=``); empty for a fixed-dimension fit."""
    dims = sorted({int(v) for v in info.selectable_dims or []})
    return dims if len(dims) > 1 else []


def _projection_rows(info: ProjectionInfo) -> list[tuple[str, str]]:
    """The projection table: the record's fields in `PROJECTION_FIELDS`' order, then its corpus and auto mode."""
    rows = [(label, _fmt(getattr(info, key))) for key, label in PROJECTION_FIELDS.items()
            if _present(getattr(info, key))]
    corpus = info.corpus
    if corpus is not None and _present(corpus.path):
        rows.append(("corpus", f"`{corpus.path}`"))
    if corpus is not None and _present(corpus.num_texts):
        sampled = f" (a seeded sample of {int(corpus.sampled_from):,})" if corpus.sampled_from else ""
        rows.append(("corpus texts", f"{int(corpus.num_texts):,}{sampled}"))
    if corpus is not None and _present(corpus.sha256):
        rows.append(("corpus sha256", f"`{corpus.sha256}`"))
    return rows + auto_rows(info.auto)


def projection_context(model_dir: Path, config: dict[str, Any]) -> dict[str, Any] | None:
    """What the card says about the fitted projection (None when the projection is the identity)."""
    info = ProjectionInfo.from_config(config)
    if info is None:
        return None
    return {
        "method": str(info.method or ""),
        "method_text": info.description or str(info.method or ""),
        "rows": _projection_rows(info),
        "plots": plot_images(model_dir, list(info.plots or [])),
        "selectable_dims": ", ".join(str(d) for d in selectable_dims(info)),
        "example_dim": min(selectable_dims(info), default=None),
        "max_dim": info.max_dim,
    }


def auto_rows(auto: AutoRecord | None) -> list[tuple[str, str]]:
    """What SpecTemp's auto mode chose at each scored k, and why (its label-free score against the reference's)."""
    if auto is None or not auto.ks:
        return []
    choices = []
    for k, chosen, route, gamma, score, reference in zip(auto.ks, auto.chosen, auto.route, auto.gamma,
                                                         auto.score_chosen, auto.score_reference, strict=True):
        what = "prefix truncation" if route == "prefix" else f"γ {gamma:.2f} {route}"
        if chosen == "reference":
            what += " (reference rule)"
        elif route != "prefix" and abs(float(chosen.removeprefix("u")) - gamma) > 5e-3:
            what += f" (score's γ {float(chosen.removeprefix('u')):.2f})"
        choices.append(f"{k}: {what}, {score:.3f}" + ("" if chosen == "reference" else f" vs {reference:.3f}"))
    weight = auto.rule_weight or 0.0
    weight_text = f"{1 - weight:g} × the score's + {weight:g} × " if weight else "the score's, not "
    usable = auto.pseudo_query_candidates if auto.pseudo_query_candidates is not None else auto.pseudo_queries
    sample = f", a seeded sample of the {usable:,} usable texts" if usable > auto.pseudo_queries else ""
    cost = f"selection {auto.selection_seconds} s + pseudo-query encoding " \
           f"{auto.pseudo_query_encode_seconds} s, vs {auto.corpus_encode_seconds} s encoding the corpus"
    return [
        ("auto: texts scored", f"{auto.pseudo_queries:,}{sample} (pseudo-query = first line or sentence)"),
        ("auto: choice per k (score = inverse-cloze + full-dimension-neighbour nDCG@10, vs the reference rule's; "
         f"where the rule's γ is below 1 the γ used is {weight_text}the rule's)",
         "; ".join(choices)),
        ("auto: cost", cost),
    ]


QUANTIZED_PRECISIONS = ("float32", "int8", "binary", "binary + rescore")


def quantization_context(model_dir: Path, model_id: str) -> dict[str, Any] | None:
    """What the card says about the quantized outputs (None without a valid ``quantization.json``): bytes per
    vector at each calibrated k and, when the fit scored them (auto mode), the pseudo-query nDCG@10 beside them."""
    from .quantization import CALIBRATION_FILE, CalibrationError, bytes_per_vector, read_calibration

    try:
        calibration = read_calibration(model_dir)
    except CalibrationError:
        return None
    scored = calibration.info.get("pseudo_query_ndcg") or {}
    frontier = scored.get("dims") or {}
    body = []
    for k in calibration.dims:
        cells = []
        for precision in QUANTIZED_PRECISIONS:
            size = f"{bytes_per_vector(k, 'ubinary' if precision.startswith('binary') else precision)} B"
            score = (frontier.get(str(k)) or {}).get(precision)
            cells.append(size if score is None else f"{score:.3f} · {size}")
        body.append([str(k), *cells])
    header = ["k", "fp32", "int8", "binary", "binary + rescore (top 100)"]
    hub = bool(_HUB_ID.match(model_id)) and not Path(model_id).exists()
    return {
        "file": CALIBRATION_FILE,
        "dims": ", ".join(str(k) for k in calibration.dims),
        "table": render_markdown(header, body),
        "scored_queries": scored.get("queries") if frontier else None,
        "int8_ranges": calibration.info.get("int8_ranges", "per-dimension ranges"),
        "binary_threshold": calibration.info.get("binary_threshold", "per-dimension thresholds"),
        "num_texts": calibration.info.get("num_texts"),
        "open_file": f'hf_hub_download("{model_id}", "{CALIBRATION_FILE}")' if hub
        else f'"{Path(model_id).as_posix()}/{CALIBRATION_FILE}"',
        "hub": hub,
    }


def training_context(model_dir: Path, config: dict[str, Any]) -> dict[str, Any] | None:
    """What the card says about fine-tuning (None for a folder that was only built)."""
    info = config.get("training_info") or {}
    if not info:
        return None
    datasets = []
    for dataset in info.get("datasets") or []:
        name = str(dataset.get("name") or dataset.get("path"))
        details = []
        if _present(dataset.get("path")) and dataset.get("path") != name:
            details.append(f"from `{dataset['path']}`")
        if _present(dataset.get("num_rows")):
            details.append(f"{int(dataset['num_rows']):,} rows")
        if _present(dataset.get("sha256")):
            details.append(f"sha256 `{dataset['sha256']}`")
        hub = is_hub_dataset(dataset)
        link = f"[`{name}`](https://huggingface.co/datasets/{name})" if hub else f"`{name}`"
        datasets.append((link, ", ".join(details), hub))
    hyperparameters = info.get("hyperparameters") or {}
    side_files = [(f"training/{name}", text) for name, (_, text) in TRAINING_SIDE_FILES.items()
                  if (model_dir / "training" / name).exists()]
    return {
        "rows": _rows(info, TRAINING_FIELDS),
        "hyperparameters": [(str(k), _fmt(v)) for k, v in hyperparameters.items() if _present(v)],
        "datasets": datasets,
        "side_files": side_files,
    }


def backbone_shape(text_config: dict[str, Any]) -> str:
    """``bert, 6 layers, hidden size 384``: read through transformers' config class (GPT-2 says ``n_layer``)."""
    from transformers import AutoConfig

    fields = {k: v for k, v in text_config.items() if k != "model_type"}
    try:
        config = AutoConfig.for_model(text_config["model_type"], **fields)
    except (ValueError, TypeError, KeyError):
        config = None
    layers = getattr(config, "num_hidden_layers", None) or text_config.get("num_hidden_layers")
    hidden = getattr(config, "hidden_size", None) or text_config.get("hidden_size")
    parts = [str(text_config["model_type"])]
    if layers:
        parts.append(f"{layers} layers")
    if hidden:
        parts.append(f"hidden size {hidden}")
    return ", ".join(parts)


def st_module_names(model_dir: Path, config: dict[str, Any], stock: bool) -> str:
    """The stock sentence-transformers modules of the export: read from a stock folder, else predicted."""
    if stock:
        modules = json.loads((model_dir / "modules.json").read_text())
        return ", ".join(m["type"].rsplit(".", 1)[-1] for m in modules)
    names = ["Transformer", "Pooling"] + (["Dense"] if config.get("dense_layers") else [])
    if ProjectionInfo.from_config(config) is not None:
        names += ["Normalize", "Dense"] if config.get("normalize_pooled") else ["Dense"]
    if config.get("normalize", True):
        names.append("Normalize")
    return ", ".join(names)


def _dump_rows(model_dir: Path, config: dict[str, Any]) -> list[tuple[str, str]]:
    """The card's [DUMP] set-up table: K, token ids, placement, initialisation, pooling."""
    dump_rows = [("K", str(config.get("num_dump_tokens", 0))),
                 ("tokens (ids)", ", ".join(f"[DUMP{i + 1}] ({t})" for i, t in enumerate(config.get("dump_token_ids",
                                                                                                    []))))]
    dump_rows.append(("placement", f"`{prefix_template(model_dir)}`"))
    if init_text(config.get("dump_init")):
        dump_rows.append(("initialisation", init_text(config.get("dump_init"))))
    pooling_row = POOLING_DESCRIPTIONS[config.get("pooling", "cls")]
    if config.get("pooling_reason"):
        pooling_row += f" ({config['pooling_reason']})"
    if config.get("include_prompt") is False:
        pooling_row += "; prompt tokens left out (include_prompt=False)"
    dump_rows.append(("pooling", pooling_row))
    if config.get("dense_layers"):
        shapes = " → ".join([str(config["dense_layers"][0]["in_features"])]
                            + [str(layer["out_features"]) for layer in config["dense_layers"]])
        dump_rows.append(("after pooling", f"the source's linear Dense layers ({shapes}), folded into one fp32 map"))
    prompts = {name: text for name, text in (config.get("prompts") or {}).items() if text}
    if prompts:
        listed = ", ".join(f"`{name}`: {text!r}" for name, text in prompts.items())
        dump_rows.append(("prompts", f"{listed} (after the [DUMP] tokens: prompts are text; the [DUMP] tokens belong "
                                     "to the tokenizer's template)"))
    return dump_rows


def card_context(
    model_dir: Path,
    config: dict[str, Any],
    model_id: str | None = None,
    revision: str | None = None,
    evaluation: dict[str, Any] | None = None,
    source_dir: Path | None = None,
) -> dict[str, Any]:
    """Everything the template shows, read from ``model_dir``; snippets load ``model_id`` (default: the folder).

    ``evaluation`` is the evaluation table's context (`hf_dumpembed.evaluation.card_evaluation`). With
    ``source_dir`` the folder is the stock export of that DumpEmbed folder, whose ``config`` is given.
    """
    stock = source_dir is not None
    text_config = config["text_config"]
    tokenizer_config = _read_json(model_dir / "tokenizer_config.json")
    base_model = config.get("base_model") or ""
    k = config.get("num_dump_tokens", 0)
    projection = projection_context(model_dir, config)
    training = training_context(model_dir, config)
    limitations = []
    if k and training is None:
        limitations.append(
            "The [DUMP] embedding rows are initialised, not trained: the paper's gains come from fine-tuning the "
            "model with the tokens (InfoNCE with hard negatives). Use this folder as a starting point for training."
        )
    if projection is not None:
        corpus = ProjectionInfo.from_config(config).corpus
        source = f" on `{corpus.path}`" if corpus is not None and corpus.path else ""
        limitations.append(
            f"The projection was fitted{source}: its mean and spectrum describe that text, and may suit text of a "
            "very different kind less well."
        )
    if tokenizer_config.get("model_max_length"):
        limitations.append(
            f"Inputs are truncated to {tokenizer_config['model_max_length']} tokens, [DUMP] and special tokens "
            "included."
        )
    blocker = stock_export_blocker(config)
    if not stock and blocker is not None:
        limitations.append(f"Loading needs `trust_remote_code=True`: this model {blocker}, which stock "
                           "sentence-transformers modules cannot express, so it has no stock export.")
    elif not stock:
        limitations.append("Loading needs `trust_remote_code=True` (or use the stock export, which does not).")

    model_id = model_id or str(model_dir)
    if evaluation is not None:
        trained_on = {str(d.get("name", "")).lower() for d in (config.get("training_info") or {}).get("datasets") or []}
        overlap = sorted(task for task in evaluation["tasks"] if task.lower() in trained_on)
        if overlap:
            limitations.insert(0, f"Evaluated on {', '.join(overlap)}, which the model was also trained on: those "
                               "scores are not a held-out measure.")
    return {
        "title": model_id.rstrip("/").split("/")[-1],
        "model_id": model_id,
        "revision_arg": f', revision="{revision}"' if revision else "",
        "revision": revision,
        "st_args": ("" if stock else ", trust_remote_code=True") + (f', revision="{revision}"' if revision else ""),
        "stock": stock,
        "st_modules": st_module_names(model_dir, config, stock),
        "base_model_display": base_model or text_config.get("_name_or_path", text_config["model_type"]),
        "backbone_kind": "decoder" if is_decoder_folder(config) else "encoder",
        "backbone_shape": backbone_shape(text_config),
        "num_dump_tokens": k,
        "dump_rows": _dump_rows(model_dir, config),
        "pooling_text": POOLING_DESCRIPTIONS[config.get("pooling", "cls")],
        "stock_blocker": blocker,
        "projected": projection is not None,
        "projection": projection,
        "quantization": quantization_context(model_dir, model_id),
        "prompts": prompts_context(config),
        "training": training,
        "evaluation": evaluation,
        "projection_dim": config.get("projection_dim"),
        "normalize": config.get("normalize", True),
        "max_seq_length": tokenizer_config.get("model_max_length"),
        "limitations": limitations,
        "citations": CITATIONS,
    }


def prompts_context(config: dict[str, Any]) -> dict[str, Any] | None:
    """The prompts the usage snippets pass, None when the folder has no non-empty prompt: ``query`` / ``document``,
    the prompt names sentence-transformers' ``encode_query`` / ``encode_document`` pick (``document``, else
    ``passage``, else ``corpus``; None where the folder has none of them), their texts, and every prompt as
    ``listed`` markdown."""
    prompts = {str(name): str(text) for name, text in (config.get("prompts") or {}).items()}
    if not any(prompts.values()):
        return None
    query = "query" if "query" in prompts else None
    document = next((name for name in ("document", "passage", "corpus") if name in prompts), None)
    return {"query": query, "document": document, "query_text": prompts.get(query or "", ""),
            "document_text": prompts.get(document or "", ""),
            "listed": ", ".join(f"`{name}`: `{text!r}`" for name, text in prompts.items() if text)}


def card_metadata(config: dict[str, Any]) -> ModelCardData:
    """The YAML front matter: library, task, tags, and base model / datasets / license / language where known."""
    base_model = config.get("base_model") or ""
    known = EMBEDDED_MODELS.get(base_model, {})
    tags = ["sentence-transformers", "feature-extraction", "sentence-similarity", "dumpembed"]
    if config.get("num_dump_tokens"):
        tags.append("dump-tokens")
    info = ProjectionInfo.from_config(config)
    if info is not None and info.method:
        tags.append(str(info.method))
    datasets = [d["name"] for d in (config.get("training_info") or {}).get("datasets") or [] if is_hub_dataset(d)]
    return ModelCardData(
        library_name="sentence-transformers",
        pipeline_tag="sentence-similarity",
        tags=tags,
        base_model=base_model if _HUB_ID.match(base_model) and not Path(base_model).exists() else None,
        datasets=datasets or None,
        license=known.get("license"),
        language=known.get("language"),
    )


def stock_source_config(model_dir: Path, source: str | Path | None) -> tuple[dict[str, Any], Path | None]:
    """The DumpEmbed config the card describes: the folder's own, or for a stock export its ``source``'s."""
    own = _read_json(model_dir / "config.json")
    if own.get("model_type") == "dumpembed":
        if source is not None:
            raise ValueError(f"{model_dir} is a DumpEmbed folder; --source is only for a stock export.")
        return own, None
    if (model_dir / "modules.json").exists() and own:
        if source is None:
            raise ValueError(
                f"{model_dir} is a stock sentence-transformers export; pass --source with the DumpEmbed folder it was "
                "exported from (its metadata goes into the card)."
            )
        config = read_dump_config(Path(source))
        check_export_source(model_dir, source)
        return config, Path(source)
    return read_dump_config(model_dir), None  # the clear "not a DumpEmbed model folder" error


def render_card(
    model_dir: str | Path,
    model_id: str | None = None,
    revision: str | None = None,
    evaluation: dict[str, Any] | None = None,
    source: str | Path | None = None,
) -> str:
    """The model card of ``model_dir`` as markdown with YAML front matter.

    ``model_id`` is what the usage snippets load (a Hub repo id, or by default the folder's path) and
    ``revision`` the commit they pin. ``evaluation`` is the evaluation table read from mteb results
    (`hf_dumpembed.evaluation.card_evaluation`). For a stock export (`hf-dumpembed export-st`), ``source`` is the
    DumpEmbed folder it came from.
    """
    model_dir = Path(model_dir)
    config, source_dir = stock_source_config(model_dir, source)
    context = card_context(model_dir, config, model_id, revision, evaluation, source_dir)
    metadata = card_metadata(config)
    if source_dir is not None:
        metadata.tags = [*metadata.tags, "text-embeddings-inference"]
    card = ModelCard.from_template(metadata, template_path=str(TEMPLATE), **context)
    return re.sub(r"\n{3,}", "\n\n", str(card)).strip() + "\n"


def write_card(
    model_dir: str | Path,
    model_id: str | None = None,
    revision: str | None = None,
    evaluation: dict[str, Any] | None = None,
    source: str | Path | None = None,
) -> Path:
    """Render the card into ``model_dir/README.md``."""
    from .._utils.folders import staged_file

    text = render_card(model_dir, model_id, revision, evaluation, source)
    path = Path(model_dir) / "README.md"
    with staged_file(path) as staging:  # the old card stays whole until the new one is complete
        staging.write_text(text)
    return path
