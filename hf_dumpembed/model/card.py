"""The model card (the folder's README.md): huggingface_hub's ModelCard rendered from the package's template
(``hf_dumpembed/model_cards/dumpembed.md``), which holds the words, with the values read here from the folder's own
files. A section whose data the folder lacks is left out, never filled with a placeholder."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from huggingface_hub import ModelCard, ModelCardData

from .._utils.folders import staged_file
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
# ProjectionInfo attribute -> the card's label, in the order the projection table lists them.
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
QUANTIZED_PRECISIONS = ("float32", "int8", "binary", "binary + rescore")


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


def _is_hub_id(name: str) -> bool:
    """``owner/name`` that is not a path on this machine."""
    return bool(_HUB_ID.match(name)) and not Path(name).exists()


def is_hub_dataset(dataset: dict[str, Any]) -> bool:
    """A training dataset is a Hub dataset when its name is ``owner/name`` and its path is that id (not a folder)."""
    name = str(dataset.get("name") or "")
    path = str(dataset.get("path") or "")
    return _is_hub_id(name) and (path in ("", name) or path.startswith(("hf://datasets/", "datasets/")))


def init_text(dump_init: str | None) -> str | None:
    """The card's words for a recorded init (``token:X`` names the copied token X), without a ``+matchN`` suffix;
    None for a value no init records."""
    name, colon, token = (dump_init or "").partition("+match")[0].partition(":")
    texts = {mode.value: text for mode, text in INIT_CARD_TEXT.items()}
    if name not in texts or bool(colon) != (name == DumpInit.TOKEN.value):
        return None
    return texts[name].format(token=token)


def prefix_template(model_dir: Path) -> str:
    """The tokenizer's single-input template from tokenizer.json, e.g. ``[CLS] [DUMP1] [DUMP2] text [SEP]``."""
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


def backbone_shape(text_config: dict[str, Any]) -> str:
    """``bert, 6 layers, hidden size 384``: read through transformers' config class (GPT-2 says ``n_layer``)."""
    from transformers import AutoConfig

    try:
        config = AutoConfig.for_model(text_config["model_type"],
                                      **{k: v for k, v in text_config.items() if k != "model_type"})
    except (ValueError, TypeError, KeyError):
        config = None
    layers = getattr(config, "num_hidden_layers", None) or text_config.get("num_hidden_layers")
    hidden = getattr(config, "hidden_size", None) or text_config.get("hidden_size")
    return ", ".join([str(text_config["model_type"])] + ([f"{layers} layers"] if layers else [])
                     + ([f"hidden size {hidden}"] if hidden else []))


def st_module_names(model_dir: Path, config: dict[str, Any], stock: bool) -> str:
    """The stock sentence-transformers modules of the export: read from a stock folder, else predicted."""
    if stock:
        return ", ".join(m["type"].rsplit(".", 1)[-1] for m in json.loads((model_dir / "modules.json").read_text()))
    names = ["Transformer", "Pooling"] + (["Dense"] if config.get("dense_layers") else [])
    if ProjectionInfo.from_config(config) is not None:
        names += ["Normalize", "Dense"] if config.get("normalize_pooled") else ["Dense"]
    return ", ".join(names + (["Normalize"] if config.get("normalize", True) else []))


def dump_context(model_dir: Path, config: dict[str, Any]) -> dict[str, Any]:
    """The [DUMP] set-up: token ids, placement, initialisation (and its matching steps), pooling details."""
    dense = config.get("dense_layers") or []
    return {
        "tokens": ", ".join(f"[DUMP{i + 1}] ({t})" for i, t in enumerate(config.get("dump_token_ids", []))),
        "placement": prefix_template(model_dir),
        "init": init_text(config.get("dump_init")),
        "match_steps": (config.get("dump_init") or "").partition("+match")[2],
        "pooling_reason": config.get("pooling_reason"),
        "include_prompt": config.get("include_prompt") is not False,
        "dense_shapes": " → ".join([str(dense[0]["in_features"])] + [str(d["out_features"]) for d in dense])
        if dense else "",
    }


def prompts_context(config: dict[str, Any]) -> dict[str, Any] | None:
    """The prompts the usage snippets pass, None when the folder has no non-empty prompt: ``query`` / ``document``,
    the prompt names sentence-transformers' ``encode_query`` / ``encode_document`` pick (``document``, else
    ``passage``, else ``corpus``; None where the folder has none of them), their texts, and every prompt listed."""
    prompts = {str(name): str(text) for name, text in (config.get("prompts") or {}).items()}
    if not any(prompts.values()):
        return None
    query = "query" if "query" in prompts else None
    document = next((name for name in ("document", "passage", "corpus") if name in prompts), None)
    return {"query": query, "document": document, "query_text": prompts.get(query or "", ""),
            "document_text": prompts.get(document or "", ""),
            "listed": ", ".join(f"`{name}`: `{text!r}`" for name, text in prompts.items() if text)}


def plot_images(model_dir: Path, listed: list[str]) -> list[tuple[str, str]]:
    """(caption, relative path) of the PNG plots in ``model_dir/plots``: those ``listed`` first, then the rest."""
    existing = sorted(p.relative_to(model_dir).as_posix() for p in (model_dir / "plots").glob("*.png"))
    ordered = [p for p in listed if p in existing] + [p for p in existing if p not in listed]
    return [(Path(p).stem.replace("_", " ").replace("-", " "), p) for p in ordered]


def selectable_dims(info: ProjectionInfo) -> list[int]:
    """Output dimensions a user may pick at load time (``projection_dim=``); empty for a fixed-dimension fit."""
    dims = sorted({int(v) for v in info.selectable_dims or []})
    return dims if len(dims) > 1 else []


def projection_rows(info: ProjectionInfo) -> list[tuple[str, str]]:
    """The projection table: the record's fields in `PROJECTION_FIELDS`' order, then its corpus and auto mode."""
    rows = [(label, _fmt(getattr(info, key, None))) for key, label in PROJECTION_FIELDS.items()
            if _present(getattr(info, key, None))]
    corpus = info.corpus
    if corpus is not None and _present(corpus.path):
        rows.append(("corpus", f"`{corpus.path}`"))
    if corpus is not None and _present(corpus.num_texts):
        sampled = f" (a seeded sample of {int(corpus.sampled_from):,})" if corpus.sampled_from else ""
        rows.append(("corpus texts", f"{int(corpus.num_texts):,}{sampled}"))
    if corpus is not None and _present(corpus.sha256):
        rows.append(("corpus sha256", f"`{corpus.sha256}`"))
    return rows + auto_rows(info.auto)


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
    rows = [("auto: texts scored", f"{auto.pseudo_queries:,}{sample} (pseudo-query = first line or sentence)")]
    if auto.saturated is not None:
        rows.append(("auto: pseudo-queries saturated?",
                     f"{'yes' if auto.saturated else 'no'}: the unprojected model's inverse-cloze nDCG@10 is "
                     f"{auto.identity_cloze:.3f} ({'>=' if auto.saturated else '<'} {auto.saturation:g}"
                     + ("; too easy to choose by, so the reference rule is kept at every k)" if auto.saturated
                        else ")")))
    how = ("the reference rule at every k, the pseudo-queries being saturated" if auto.saturated else
           f"where the rule's γ is below 1 the γ used is {weight_text}the rule's")
    return rows + [
        ("auto: choice per k (score = inverse-cloze + full-dimension-neighbour nDCG@10, vs the reference rule's; "
         f"{how})", "; ".join(choices)),
        ("auto: cost", f"selection {auto.selection_seconds} s + pseudo-query encoding "
                       f"{auto.pseudo_query_encode_seconds} s, vs {auto.corpus_encode_seconds} s encoding the corpus"),
    ]


def projection_context(model_dir: Path, info: ProjectionInfo | None) -> dict[str, Any] | None:
    """The fitted projection (None when it is the identity): its words, table rows, plots and load-time dims."""
    if info is None:
        return None
    dims = selectable_dims(info)
    return {
        "method": str(info.method or ""),
        "description": info.description or str(info.method or ""),
        "rows": projection_rows(info),
        "plots": plot_images(model_dir, list(info.plots or [])),
        "selectable_dims": ", ".join(str(d) for d in dims),
        "example_dim": min(dims, default=None),
        "max_dim": info.max_dim,
        "corpus_path": info.corpus.path if info.corpus is not None else None,
    }


def quantization_context(model_dir: Path, model_id: str) -> dict[str, Any] | None:
    """The quantized outputs (None without a valid ``quantization.json``): bytes per vector at each calibrated k and,
    when the fit scored them (auto mode), the pseudo-query nDCG@10 beside them."""
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
    hub = _is_hub_id(model_id)
    return {
        "file": CALIBRATION_FILE,
        "dims": ", ".join(str(k) for k in calibration.dims),
        "table": render_markdown(["k", "fp32", "int8", "binary", "binary + rescore (top 100)"], body),
        "scored_queries": scored.get("queries") if frontier else None,
        "int8_ranges": calibration.info.get("int8_ranges", "per-dimension ranges"),
        "binary_threshold": calibration.info.get("binary_threshold", "per-dimension thresholds"),
        "num_texts": calibration.info.get("num_texts"),
        "open_file": f'hf_hub_download("{model_id}", "{CALIBRATION_FILE}")' if hub
        else f'"{Path(model_id).as_posix()}/{CALIBRATION_FILE}"',
        "hub": hub,
    }


def training_context(model_dir: Path, config: dict[str, Any]) -> dict[str, Any] | None:
    """Fine-tuning (None for a folder that was only built): its settings, hyperparameters, data and record files."""
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
        link = f"[`{name}`](https://huggingface.co/datasets/{name})" if is_hub_dataset(dataset) else f"`{name}`"
        datasets.append({"link": link, "details": ", ".join(details)})
    return {
        "rows": [(label, _fmt(info[key])) for key, label in TRAINING_FIELDS.items() if _present(info.get(key))],
        "hyperparameters": [(str(k), _fmt(v)) for k, v in (info.get("hyperparameters") or {}).items() if _present(v)],
        "datasets": datasets,
        "side_files": [(f"training/{name}", text) for name, (_, text) in TRAINING_SIDE_FILES.items()
                       if (model_dir / "training" / name).exists()],
    }


def evaluated_on_training_data(config: dict[str, Any], evaluation: dict[str, Any] | None) -> list[str]:
    """The evaluated tasks whose names are also training datasets' (their scores are not held out)."""
    if evaluation is None:
        return []
    trained_on = {str(d.get("name", "")).lower() for d in (config.get("training_info") or {}).get("datasets") or []}
    return sorted(task for task in evaluation["tasks"] if task.lower() in trained_on)


def card_context(model_dir: Path, config: dict[str, Any], model_id: str, revision: str | None = None,
                 evaluation: dict[str, Any] | None = None, stock: bool = False) -> dict[str, Any]:
    """Every value the template shows, read from ``model_dir`` (for a stock export, ``config`` is its DumpEmbed
    source's); the snippets load ``model_id`` at ``revision``. ``evaluation`` is the evaluation table
    (`hf_dumpembed.evaluation.card_evaluation`)."""
    text_config = config["text_config"]
    load_kwargs = {} if stock else {"trust_remote_code": "True"}  # the snippets' loading arguments, as Python code
    if revision:
        load_kwargs["revision"] = f'"{revision}"'
    return {
        "title": model_id.rstrip("/").split("/")[-1],
        "model_id": model_id,
        "revision": revision,
        "load_args": "".join(f", {key}={value}" for key, value in load_kwargs.items()),
        "model_kwargs": "{" + ", ".join(f'"{key}": {value}' for key, value in load_kwargs.items()) + "}",
        "remote_code_arg": "" if stock else ", trust_remote_code=True",
        "stock": stock,
        "stock_blocker": stock_export_blocker(config),
        "st_modules": st_module_names(model_dir, config, stock),
        "backbone": config.get("base_model") or text_config.get("_name_or_path", text_config["model_type"]),
        "backbone_kind": "decoder" if is_decoder_folder(config) else "encoder",
        "backbone_shape": backbone_shape(text_config),
        "num_dump_tokens": config.get("num_dump_tokens", 0),
        "dump": dump_context(model_dir, config),
        "pooling_text": POOLING_DESCRIPTIONS[config.get("pooling", "cls")],
        "projection": projection_context(model_dir, ProjectionInfo.from_config(config)),
        "projection_dim": config.get("projection_dim"),
        "normalize": config.get("normalize", True),
        "max_seq_length": _read_json(model_dir / "tokenizer_config.json").get("model_max_length"),
        "prompts": prompts_context(config),
        "quantization": quantization_context(model_dir, model_id),
        "training": training_context(model_dir, config),
        "evaluation": evaluation,
        "evaluated_on_training_data": evaluated_on_training_data(config, evaluation),
        "citations": "\n".join(PAPERS.values()),
    }


def card_metadata(config: dict[str, Any], stock: bool = False) -> ModelCardData:
    """The YAML front matter: library, task, tags, and base model / datasets / license / language where known."""
    base_model = config.get("base_model") or ""
    known = EMBEDDED_MODELS.get(base_model, {})
    info = ProjectionInfo.from_config(config)
    tags = ["sentence-transformers", "feature-extraction", "sentence-similarity", "dumpembed"]
    tags += ["dump-tokens"] if config.get("num_dump_tokens") else []
    tags += [str(info.method)] if info is not None and info.method else []
    tags += ["text-embeddings-inference"] if stock else []
    datasets = [d["name"] for d in (config.get("training_info") or {}).get("datasets") or [] if is_hub_dataset(d)]
    return ModelCardData(
        library_name="sentence-transformers",
        pipeline_tag="sentence-similarity",
        tags=tags,
        base_model=base_model if _is_hub_id(base_model) else None,
        datasets=datasets or None,
        license=known.get("license"),
        language=known.get("language"),
    )


def read_dump_config(model_dir: Path) -> dict[str, Any]:
    """The folder's config.json; a clear error when it is not a DumpEmbed model."""
    config = _read_json(model_dir / "config.json")
    if config.get("model_type") != "dumpembed":
        raise ValueError(f"{model_dir} is not a DumpEmbed model folder (config.json model_type must be 'dumpembed').")
    return config


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


def render_card(model_dir: str | Path, model_id: str | None = None, revision: str | None = None,
                evaluation: dict[str, Any] | None = None, source: str | Path | None = None) -> str:
    """The model card of ``model_dir`` as markdown with YAML front matter.

    ``model_id`` is what the usage snippets load (a Hub repo id, or by default the folder's path) and
    ``revision`` the commit they pin. ``evaluation`` is the evaluation table read from mteb results
    (`hf_dumpembed.evaluation.card_evaluation`). For a stock export (`hf-dumpembed export-st`), ``source`` is the
    DumpEmbed folder it came from.
    """
    model_dir = Path(model_dir)
    config, source_dir = stock_source_config(model_dir, source)
    stock = source_dir is not None
    context = card_context(model_dir, config, model_id or str(model_dir), revision, evaluation, stock)
    card = ModelCard.from_template(card_metadata(config, stock), template_path=str(TEMPLATE), **context)
    return re.sub(r"\n{3,}", "\n\n", str(card)).strip() + "\n"


def write_card(model_dir: str | Path, model_id: str | None = None, revision: str | None = None,
               evaluation: dict[str, Any] | None = None, source: str | Path | None = None) -> Path:
    """Render the card into ``model_dir/README.md``."""
    text = render_card(model_dir, model_id, revision, evaluation, source)
    path = Path(model_dir) / "README.md"
    with staged_file(path) as staging:  # the old card stays whole until the new one is complete
        staging.write_text(text)
    return path
