"""Fine-tune a DumpEmbed model with sentence-transformers' trainer: InfoNCE (scale 20) with in-batch and hard
negatives, GradCache, no-duplicates batches, resumable checkpoints, DDP with cross-device negatives.

The model is a DumpEmbed folder (built from ``model.backbone`` with K [DUMP] tokens, or ``model.init_from``)
loaded through ``SentenceTransformer(trust_remote_code=True)``: its single stock Transformer module wraps the
whole ``DumpEmbedModel`` (backbone with the [DUMP] embedding rows, pooling, projection, normalisation), so the
[DUMP] rows train with the rest of the model through the retrieval loss only. K = 0 runs the same code.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import logging
import os
import shutil
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from transformers import TrainerCallback

from .._utils.atomic import check_separate, output_lock
from .._utils.folders import check_output_dir, staged_output
from .._utils.machine import machine_info
from .._utils.public_paths import public_path
from ..data.assets import resolve_backbone
from ..model.builder import BuildOptions, build, save_dump_model
from ..model.card import write_card
from ..model.dumpembed_folder import require_dumpembed_folder
from ..model.folder_schema import folder_code_may_run
from .config import TrainConfig, load_config, save_config
from .data import DataReport, load_training_data
from .provenance import check_data_unchanged, public_config, public_report

logger = logging.getLogger(__name__)

INITIAL_MODEL = "initial-model"
RUN_CONFIG = "run_config.yaml"
LOSS_NAMES = {"cached_mnrl": "CachedMultipleNegativesRankingLoss", "mnrl": "MultipleNegativesRankingLoss"}


def prepare_initial_model(config: TrainConfig) -> Path:
    """The DumpEmbed folder training starts from: ``init_from``, or the backbone built once into the checkpoints."""
    if config.model.init_from:  # `train` checked it with require_dumpembed_folder
        return Path(config.model.init_from)
    folder = config.checkpoint_path / INITIAL_MODEL
    if (folder / "modules.json").exists():
        return folder
    options = BuildOptions(
        num_dump_tokens=config.model.num_dump_tokens, pooling=config.model.pooling, init=config.model.init,
        init_token=config.model.init_token, max_seq_length=config.model.max_seq_length, seed=config.model.init_seed,
        match_steps=config.model.match_steps,
    )
    logger.info("Building the initial model (K=%d) from %s", options.num_dump_tokens, config.model.backbone)
    return build(resolve_backbone(config.model.backbone), folder, options, overwrite=True)


def text_length(initial: Path, config: TrainConfig) -> int | None:
    """Tokens of each text the trained model reads: ``model.max_seq_length`` less its K [DUMP] tokens (None when
    the length is the model's own)."""
    if config.model.max_seq_length is None:
        return None
    return config.model.max_seq_length - int(json.loads((initial / "config.json").read_text())["num_dump_tokens"])


def use_bf16(precision: str) -> bool:
    """bf16 autocast: ``auto`` = on CUDA devices that support it; ``bf16`` = always; ``fp32`` = never."""
    if precision == "auto":
        return torch.cuda.is_available() and torch.cuda.is_bf16_supported()
    return precision == "bf16"


def training_arguments(config: TrainConfig) -> Any:
    """sentence-transformers training arguments of the run (creating them sets up the distributed state)."""
    from sentence_transformers.base.sampler import BatchSamplers
    from sentence_transformers.sentence_transformer.training_args import SentenceTransformerTrainingArguments

    hp = config.training
    cpu = not torch.cuda.is_available()
    distributed = int(os.environ.get("WORLD_SIZE", "1")) > 1
    return SentenceTransformerTrainingArguments(
        output_dir=str(config.checkpoint_path),
        num_train_epochs=hp.epochs,
        max_steps=hp.max_steps or -1,
        per_device_train_batch_size=hp.batch_size,
        learning_rate=hp.learning_rate,
        warmup_steps=hp.warmup_ratio,  # a float in [0, 1) is a ratio of the total steps
        weight_decay=hp.weight_decay,
        lr_scheduler_type=hp.lr_scheduler,
        bf16=use_bf16(hp.precision),
        activation_checkpointing=hp.gradient_checkpointing,
        seed=config.seed,
        data_seed=config.seed,
        batch_sampler=BatchSamplers.NO_DUPLICATES if hp.no_duplicates else BatchSamplers.BATCH_SAMPLER,
        dataloader_drop_last=True,
        save_strategy="steps",
        save_steps=hp.save_steps,
        save_total_limit=hp.save_total_limit,
        logging_steps=hp.logging_steps,
        logging_first_step=True,
        report_to="none",
        use_cpu=cpu,
        ddp_backend="gloo" if cpu and distributed else None,
        disable_tqdm=False,
    )


def make_loss(model: Any, config: TrainConfig, world_size: int) -> torch.nn.Module:
    """InfoNCE on cosine similarity (scale 20 = temperature 0.05), GradCache'd unless ``loss: mnrl``."""
    from sentence_transformers.sentence_transformer.losses import (
        CachedMultipleNegativesRankingLoss,
        MultipleNegativesRankingLoss,
    )

    hp = config.training
    gather = hp.gather_across_devices and world_size > 1
    if hp.loss == "cached_mnrl":
        return CachedMultipleNegativesRankingLoss(model, scale=hp.scale, mini_batch_size=hp.mini_batch_size,
                                                  gather_across_devices=gather)
    return MultipleNegativesRankingLoss(model, scale=hp.scale, gather_across_devices=gather)


class StepLog(TrainerCallback):
    """One readable line per logging step: loss, learning rate, seconds per step, examples per second."""

    def __init__(self, global_batch: int) -> None:
        self.global_batch = global_batch
        self.last: tuple[float, int] | None = None

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.last = (time.perf_counter(), state.global_step)

    def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kwargs: Any) -> None:
        if not state.is_world_process_zero or not logs or "loss" not in logs or self.last is None:
            return
        now, steps = time.perf_counter(), state.global_step - self.last[1]
        step_time = (now - self.last[0]) / steps if steps else float("nan")
        self.last = (now, state.global_step)
        logger.info("step %d/%d  loss %.4f  lr %.2e  %.2f s/step  %.1f examples/s", state.global_step,
                    state.max_steps, logs["loss"], logs.get("learning_rate", float("nan")), step_time,
                    self.global_batch / step_time if steps else float("nan"))


class DumpRowsLearningRate(TrainerCallback):
    """Train the [DUMP] embedding rows at their own learning rate, ``multiplier`` x the run's.

    AdamW's step is linear in the learning rate (−lr·(m̂/(√v̂+ε) + wd·θ)) and its moment estimates do not depend on
    it, so scaling the rows' change in every optimizer step by ``multiplier`` is exactly a parameter group with
    lr x multiplier for those K rows, while the saved folder keeps one plain embedding matrix.
    """

    def __init__(self, multiplier: float) -> None:
        self.multiplier = multiplier
        self._before: torch.Tensor | None = None

    @staticmethod
    def _rows(model: Any) -> tuple[torch.Tensor, list[int]]:
        dump_model = model[0].auto_model
        return dump_model.get_input_embeddings().weight, list(dump_model.config.dump_token_ids)

    def on_pre_optimizer_step(self, args: Any, state: Any, control: Any, model: Any = None, **kwargs: Any) -> None:
        weight, ids = self._rows(model)
        self._before = weight.detach()[ids].clone() if ids else None

    @torch.no_grad()
    def on_optimizer_step(self, args: Any, state: Any, control: Any, model: Any = None, **kwargs: Any) -> None:
        if self._before is None:
            return
        weight, ids = self._rows(model)
        weight[ids] = self._before + self.multiplier * (weight[ids] - self._before)
        self._before = None


def last_complete_checkpoint(folder: Path) -> str | None:
    """The newest checkpoint whose ``trainer_state.json`` (the trainer writes it last) is readable.

    A run killed while saving leaves a partial ``checkpoint-N``; it holds nothing usable, so it is removed (by rank
    0) and the previous checkpoint is used.
    """
    if not folder.is_dir():
        return None
    numbered = [p for p in folder.glob("checkpoint-*") if p.is_dir() and p.name.split("-", 1)[1].isdigit()]
    for checkpoint in sorted(numbered, key=lambda p: int(p.name.split("-", 1)[1]), reverse=True):
        try:
            json.loads((checkpoint / "trainer_state.json").read_text())
            return str(checkpoint)
        except (OSError, ValueError):
            logger.warning("%s is incomplete (the run was stopped while saving it); removing it.", checkpoint)
            if int(os.environ.get("RANK", "0")) == 0:
                shutil.rmtree(checkpoint, ignore_errors=True)
    return None


def check_resumable(config: TrainConfig, resume: bool) -> str | None:
    """The checkpoint to resume from (None: start fresh); refuse to mix runs or to clobber a finished one."""
    output, checkpoints = Path(config.output), config.checkpoint_path
    inputs = [d.path for d in config.data] + [config.model.init_from]
    check_separate(output, inputs)
    check_separate(checkpoints, inputs)
    if not (resume and output.is_dir() and any(output.iterdir())):
        check_output_dir(output, config.overwrite)
    elif not config.overwrite:
        raise FileExistsError(f"{output} already holds a trained model: this run finished. Choose another output, "
                              "or set overwrite: true to train again.")
    last = last_complete_checkpoint(checkpoints)
    saved = checkpoints / RUN_CONFIG
    if last and not resume:
        raise FileExistsError(
            f"{checkpoints} holds checkpoints of an earlier run ({Path(last).name}). Pass --resume to continue it, "
            "or delete that folder to start again."
        )
    if resume and saved.exists() and dataclasses.replace(load_config(saved), overwrite=config.overwrite) != config:
        raise ValueError(f"--resume: the config differs from the one the checkpoints in {checkpoints} were made "
                         f"with ({saved}); resume with the same config, or start a new run elsewhere.")
    if resume and not last:
        logger.warning("--resume: no checkpoint in %s yet; starting from the beginning.", checkpoints)
    return last


def training_info(config: TrainConfig, reports: list[DataReport], steps: int, world_size: int, bf16: bool,
                  max_seq_length: int) -> dict[str, Any]:
    """``config.training_info`` of the trained model (read by the model card and the MTEB metadata)."""
    hp = config.training
    hyperparameters = {
        "num_dump_tokens": config.model.num_dump_tokens if config.model.backbone else None,
        "scale": hp.scale,
        "temperature": 1.0 / hp.scale,
        "per_device_batch_size": hp.batch_size,
        "global_batch_size": hp.batch_size * world_size,
        "mini_batch_size": hp.mini_batch_size if hp.loss == "cached_mnrl" else None,
        "num_negatives": config.data[0].num_negatives,
        "learning_rate": hp.learning_rate,
        "dump_learning_rate": hp.dump_learning_rate if hp.dump_learning_rate is not None else hp.learning_rate,
        "warmup_ratio": hp.warmup_ratio,
        "lr_scheduler": hp.lr_scheduler,
        "optimizer": "adamw_torch",
        "weight_decay": hp.weight_decay,
        "epochs": hp.epochs,
        "max_steps": hp.max_steps,
        "max_seq_length": max_seq_length,
        "precision": "bf16" if bf16 else "fp32",
        "gradient_checkpointing": hp.gradient_checkpointing,
        "batch_sampler": "no_duplicates" if hp.no_duplicates else "default",
        "gather_across_devices": hp.gather_across_devices and world_size > 1,
        "world_size": world_size,
    }
    return {
        "datasets": [public_report(report, entry=True) for report in reports],
        "loss": LOSS_NAMES[hp.loss],
        "hyperparameters": hyperparameters,
        "seed": config.seed,
        "steps": steps,
        "trained_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }


def save_trained_model(st_model: Any, config: TrainConfig, reports: list[DataReport], info: dict[str, Any]) -> Path:
    """Write the model folder the way `builder.save_dump_model` does, plus ``training/`` side files, atomically."""
    model, tokenizer = st_model[0].auto_model, st_model[0].tokenizer
    model.config.training_info = info
    output = Path(config.output)
    with staged_output(output, overwrite=config.overwrite, inputs=[d.path for d in config.data]) as staging:
        save_dump_model(model.to("cpu"), tokenizer, staging, overwrite=True)
        side = staging / "training"
        side.mkdir()
        save_config(public_config(config), side / "config.yaml")
        environment = {**machine_info(), "world_size": int(os.environ.get("WORLD_SIZE", "1"))}  # library versions
        (side / "environment.json").write_text(json.dumps(environment, indent=2) + "\n")
        (side / "data_files.json").write_text(
            json.dumps([public_report(r) for r in reports], indent=2, ensure_ascii=False) + "\n")
        write_card(staging, model_id=public_path(output))
    return output


def train(config: TrainConfig, resume: bool = False, callbacks: Sequence[TrainerCallback] = (),
          trust_remote_code: bool = False) -> Path:
    """Run the training ``config`` describes and write the trained DumpEmbed model folder to ``config.output``.

    With ``resume`` the run continues from the last checkpoint in ``config.checkpoint_path`` (model, optimizer,
    scheduler, sampler position and random states), ending with the same number of steps as an uninterrupted
    run. Under ``torchrun``/``accelerate launch`` each process trains on its share of every global batch with
    in-batch negatives gathered across processes; only rank 0 writes. A ``model.init_from`` folder that is not
    exactly one hf_dumpembed writes is refused unless ``trust_remote_code``, and so is a mining-model folder that
    claims to be a DumpEmbed model; the backbone and any other mining model (a plain sentence-transformers folder, a
    Hub id) load with transformers' and sentence-transformers' own code only (their code never runs). A run that
    fails before its first checkpoint leaves no checkpoint folder it created.
    """
    if config.model.init_from:  # loaded with its remote code: it must be a folder hf_dumpembed wrote
        require_dumpembed_folder(config.model.init_from)
        folder_code_may_run(config.model.init_from, trust_remote_code)
    for miner in (data.mining.model for data in config.data):  # runs code only when exactly ours (or trusted)
        if miner:
            folder_code_may_run(miner, trust_remote_code)
    if int(os.environ.get("RANK", "0")) != 0:
        return _train(config, resume, callbacks)
    with output_lock(config.output):  # one run per output; a second one fails now with the first one's pid
        fresh = not config.checkpoint_path.exists()
        try:
            return _train(config, resume, callbacks)
        except BaseException:
            if fresh and config.checkpoint_path.is_dir() and last_complete_checkpoint(config.checkpoint_path) is None:
                shutil.rmtree(config.checkpoint_path, ignore_errors=True)  # nothing to resume from: leave nothing
            raise


def _train(config: TrainConfig, resume: bool, callbacks: Sequence[TrainerCallback]) -> Path:
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.trainer import SentenceTransformerTrainer

    last = check_resumable(config, resume)
    args = training_arguments(config)
    world_size = args.world_size
    with args.main_process_first(desc="building the model and preparing the data"):
        if args.process_index == 0:
            config.checkpoint_path.mkdir(parents=True, exist_ok=True)
            save_config(config, config.checkpoint_path / RUN_CONFIG)
        initial = prepare_initial_model(config)
        mining_model = config.model.init_from or resolve_backbone(config.model.backbone)
        dataset, reports = load_training_data(config.data, mining_model, text_length(initial, config),
                                              config.checkpoint_path / "mined")
        if args.process_index == 0:
            check_data_unchanged(config.checkpoint_path, reports, resuming=last is not None)
    global_batch = config.training.batch_size * world_size
    if global_batch > len(dataset):
        raise ValueError(f"The global batch ({config.training.batch_size} per device x {world_size} device(s) = "
                         f"{global_batch}) is larger than the dataset ({len(dataset)} rows): not one full batch. "
                         "Lower training.batch_size or add data.")

    model = SentenceTransformer(str(initial), trust_remote_code=True, device="cpu" if args.use_cpu else None)
    if config.model.max_seq_length is not None:
        model.max_seq_length = config.model.max_seq_length
        model.tokenizer.model_max_length = config.model.max_seq_length
    dump_lr = config.training.dump_learning_rate
    row_callbacks = [] if dump_lr is None else [DumpRowsLearningRate(dump_lr / config.training.learning_rate)]
    trainer = SentenceTransformerTrainer(
        model=model, args=args, train_dataset=dataset, loss=make_loss(model, config, world_size),
        callbacks=[StepLog(global_batch), *row_callbacks, *callbacks],
    )
    logger.info("Training %s on %d rows: global batch %d, %s, lr %g, seed %d, world size %d", initial,
                len(dataset), global_batch, LOSS_NAMES[config.training.loss], config.training.learning_rate,
                config.seed, world_size)
    trainer.train(resume_from_checkpoint=last)
    if not trainer.is_world_process_zero():
        trainer.accelerator.wait_for_everyone()
        return Path(config.output)
    info = training_info(config, reports, trainer.state.global_step, world_size, args.bf16, model.max_seq_length)
    output = save_trained_model(model, config, reports, info)
    logger.info("Wrote %s (%d steps)", output, trainer.state.global_step)
    trainer.accelerator.wait_for_everyone()
    return output
