"""Leaderboard submission kit: the folder's ``mteb.ModelMeta`` (`model_meta`) as a Python snippet for the mteb PR,
and the results folder laid out for the embeddings-benchmark/results PR."""

from __future__ import annotations

import enum
import json
import re
import shutil
from pathlib import Path
from typing import Any

from .leaderboard import check_leaderboard_results
from .model_meta import SubmissionOptions, build_model_meta
from .results import read_task_result, result_cache

_HEX40 = re.compile(r"^[0-9a-f]{40}$")


def _python_value(value: Any) -> str:
    if isinstance(value, enum.Enum):
        return repr(value.value)
    if isinstance(value, float) and value.is_integer():
        return repr(int(value))
    if isinstance(value, set):
        return "{" + ", ".join(repr(v) for v in sorted(value)) + "}" if value else "set()"
    return repr(value)


def model_meta_snippet(meta) -> str:
    """Python source for the mteb PR (``mteb/models/model_implementations/<org>_models.py``)."""
    variable = re.sub(r"\W", "_", meta.name.split("/")[-1]).lower()
    fields = []
    for key, value in meta:
        info = type(meta).model_fields[key]
        if key == "loader" or (not info.is_required() and value == info.get_default(call_default_factory=True)):
            continue
        fields.append(f"    {key}={_python_value(value)},")
    return "\n".join(
        [
            "from mteb.models.model_meta import ModelMeta",
            "from mteb.models.sentence_transformer_wrapper import SentenceTransformerEncoderWrapper",
            "",
            f"{variable} = ModelMeta(",
            "    loader=SentenceTransformerEncoderWrapper,",
            *fields,
            ")",
            "",
        ]
    )


def submission_meta(model_dir: str | Path, options: SubmissionOptions | None = None):
    """The ModelMeta of the mteb PR: the Hub name loaded by mteb's stock ``SentenceTransformerEncoderWrapper`` (the
    folder loader lives in hf_dumpembed, which mteb's registry cannot import), ``embed_dim`` the dimension the
    results were computed at (the leaderboard shows ``max(embed_dim)``)."""
    return build_model_meta(model_dir, options or SubmissionOptions(), hub_loader=True, all_dims=False)


def _task_files(results_dir: Path, meta) -> list[Path]:
    """The result files of ``meta``'s model and revision under ``results_dir`` (mteb's ``ResultCache`` paths)."""
    try:
        cache = result_cache(results_dir)
    except (FileNotFoundError, ValueError):
        return []
    return sorted(cache.get_cache_paths(models=[meta], require_model_meta=False, include_remote=False))


def write_submission(
    model_dir: str | Path, results_dir: str | Path, out: str | Path, options: SubmissionOptions | None = None,
    overwrite: bool = False,
) -> Path:
    """Write ``OUT/model_meta.py`` (the mteb PR snippet), ``OUT/model_meta.json`` and
    ``OUT/results/<org>__<name>/<revision>/`` (task JSONs + model_meta.json, the results-repo PR)."""
    meta = submission_meta(model_dir, options)
    results_dir, out = Path(results_dir), Path(out)
    task_files = _task_files(results_dir, meta)
    if not task_files:
        raise FileNotFoundError(
            f"no mteb results for {meta.name} at revision {meta.revision} under {results_dir} (expected "
            f"{meta.model_name_as_path()}/{meta.revision}/<Task>.json, as `hf-dumpembed eval` writes them). Run "
            "`hf-dumpembed eval` with the same --model-name/--revision first."
        )
    for path in task_files:
        read_task_result(path)  # a clear error naming the file when it is not a valid mteb result
    check_leaderboard_results(task_files)  # official mteb tasks only, complete for their evaluation splits
    from .._utils.folders import staged_output

    with staged_output(out, overwrite=overwrite, inputs=[model_dir, results_dir]) as staging:
        target = staging / "results" / meta.model_name_as_path() / meta.revision
        target.mkdir(parents=True)
        for path in task_files:
            shutil.copy2(path, target / path.name)
        meta_json = json.dumps(meta.to_dict(), indent=2, default=str) + "\n"
        (target / "model_meta.json").write_text(meta_json, encoding="utf-8")
        (staging / "model_meta.json").write_text(meta_json, encoding="utf-8")
        (staging / "model_meta.py").write_text(model_meta_snippet(meta), encoding="utf-8")
        if not _HEX40.match(meta.revision):
            (staging / "WARNING.txt").write_text(
                f"revision {meta.revision!r} is not a 40-hex Hub commit: push the model and re-run with --revision.\n"
            )
    return out
