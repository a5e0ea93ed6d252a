"""Export a DumpEmbed folder as a stock sentence-transformers pipeline that needs no remote code.

Transformer (the backbone, native model_type) -> Pooling -> Dense (the projection, when it is not the
identity) -> Normalize. Engines that only know stock modules (e.g. TEI) can serve it. The tokenizer.json is copied
unchanged, so its post-processor still prepends the [DUMP] tokens. The files are then rewritten in formats that
sentence-transformers 3.x-6.x and transformers 4.x-5.x all read (see stock_compat).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules.transformer import Transformer
from sentence_transformers.sentence_transformer.modules import Dense, Normalize, Pooling

from .._utils.atomic import output_lock
from .._utils.folders import check_output_dir, staged_output
from ..model.dumpembed_folder import require_dumpembed_folder
from ..model.export_record import write_export_record
from ..model.exportable import ST_POOLING, stock_export_blocker
from ..model.folder_schema import folder_code_may_run
from ..model.st_files import folder_prompts, st_settings
from ..remote import DumpEmbedModel
from .stock_compat import copy_tokenizer_files, make_portable


def linear_dense(weight: torch.Tensor, bias: torch.Tensor) -> Dense:
    """``x @ weight + bias`` as a stock Dense (no activation)."""
    return Dense(in_features=weight.shape[0], out_features=weight.shape[1], bias=True,
                 activation_function=torch.nn.Identity(), init_weight=weight.T.contiguous(), init_bias=bias)


def source_dense_as_dense(model: DumpEmbedModel) -> Dense | None:
    """The source's folded Dense layers (``x @ weight + bias``) as one stock linear Dense; None without them."""
    if model.pooled_dense is None:
        return None
    return linear_dense(model.pooled_dense.weight.detach().float(), model.pooled_dense.bias.detach().float().clone())


def projection_as_dense(model: DumpEmbedModel) -> Dense:
    """The affine map ``(x - mean) @ matrix`` as a stock Dense: weight = matrixᵀ, bias = -meanᵀ·matrix."""
    matrix = model.projection.matrix.detach().float()
    return linear_dense(matrix, -(model.projection.mean.detach().float() @ matrix))


def export_stock_st(model_dir: str | Path, out_dir: str | Path, overwrite: bool = False,
                    check: Callable[[Path], None] | None = None, trust_remote_code: bool = False) -> Path:
    """Write ``out_dir`` as a stock sentence-transformers model reproducing ``model_dir``'s vectors.

    ``check(staging)`` runs on the complete export before it is moved into place: when it raises, nothing is
    written (e.g. the vector comparison of `hf-dumpembed export-st`). ``model_dir`` must be exactly a folder
    hf_dumpembed writes (`folder_code_may_run`) unless ``trust_remote_code``.
    """
    model_dir = Path(model_dir)
    require_dumpembed_folder(model_dir)
    folder_code_may_run(model_dir, trust_remote_code)  # a folder of exactly hf_dumpembed's shape, or the user's word
    check_output_dir(out_dir, overwrite, inputs=[model_dir])
    with output_lock(out_dir):
        return _export(model_dir, out_dir, overwrite, check)


def _export(model_dir: Path, out_dir: str | Path, overwrite: bool, check: Callable[[Path], None] | None) -> Path:
    model = DumpEmbedModel.from_pretrained(model_dir, dtype="auto")  # the backbone keeps the folder's dtype
    folder_prompts(model_dir, model.config)  # refused where config.json and config_sentence_transformers.json disagree
    blocker = stock_export_blocker(model.config.to_dict())
    if blocker is not None:
        rebuild = ""
        if model.config.prompt_mode is None:
            # mean_no_dump: stock Pooling's prompt exclusion is no substitute (it drops [CLS] with the [DUMP] slots)
            drop_dump = " (Pooling's include_prompt=False would also drop [CLS])"
            rebuild = (drop_dump if model.config.pooling == "mean_no_dump" else "") + (
                "; or rebuild with --pooling mean to get a stock-exportable model")
        raise ValueError(f"{model_dir} {blocker}, which stock sentence-transformers modules cannot express exactly: "
                         f"serve it with remote code (trust_remote_code=True){rebuild}.")
    with staged_output(out_dir, overwrite=overwrite, inputs=[model_dir]) as staging:
        backbone_dir = staging / "_backbone"
        model.backbone.save_pretrained(backbone_dir, safe_serialization=True)
        copy_tokenizer_files(model_dir, backbone_dir)
        transformer = Transformer(str(backbone_dir))
        modules: list[torch.nn.Module] = [
            transformer,
            Pooling(transformer.get_embedding_dimension(), ST_POOLING[model.config.pooling],
                    include_prompt=model.config.include_prompt),
        ]
        dense = source_dense_as_dense(model)
        if dense is not None:
            modules.append(dense)
        if not model.projection_is_identity():  # the model's own rule: no Dense layer is needed
            if model.config.normalize_pooled:  # fitted maps read the unit-length pooled embedding
                modules.append(Normalize())
            modules.append(projection_as_dense(model))
        if model.config.normalize:
            modules.append(Normalize())
        stock = SentenceTransformer(modules=modules, **st_settings(model.config))
        stock.save(str(staging))
        shutil.rmtree(backbone_dir)
        (staging / "README.md").unlink(missing_ok=True)  # the model card is rendered by `hf-dumpembed card`
        copy_tokenizer_files(model_dir, staging)  # ST re-saves the tokenizer; keep the original files byte for byte
        make_portable(staging, stock.max_seq_length)  # formats sentence-transformers 3.x-6.x, transformers 4.x-5.x read
        copy_calibration(model_dir, staging, int(model.projection.matrix.shape[1]))
        write_export_record(staging, model_dir)  # `card --source` checks it
        if check is not None:
            check(staging)
    return Path(out_dir)


def copy_calibration(model_dir: Path, out_dir: Path, k: int) -> None:
    """The quantization calibration of ``model_dir`` at the export's output dimension ``k`` (when it has one), so
    that `hf_dumpembed.quantize` gives the stock export's vectors the same codes."""
    from ..model.quantization import CALIBRATION_FILE, Calibration, read_calibration, write_calibration

    if not (model_dir / CALIBRATION_FILE).is_file():
        return
    calibration = read_calibration(model_dir)
    if k in calibration.ranges:
        write_calibration(out_dir, Calibration({k: calibration.ranges[k]}, {k: calibration.thresholds[k]},
                                               dict(calibration.info)))
