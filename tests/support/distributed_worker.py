"""Worker of the 2-process gloo tests of `tests/projections/test_fit_distributed.py`: one process group per rank runs
the library's distributed fit and the training loss on its share of a batch, and saves what it saw and computed under
``out``."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import torch


def perturbed_model(model_dir: Path) -> Any:
    """The SentenceTransformer of ``model_dir`` in float64 with dropout off, moved away from its near-constant random
    init (seeded: every process gets the same weights) so that gradients are not ~0."""
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(model_dir), trust_remote_code=True, device="cpu").eval().double()
    torch.manual_seed(0)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(torch.randn_like(parameter) * 0.05)
    return model


def features(model: Any, rows: list[dict[str, str]]) -> list[dict[str, torch.Tensor]]:
    return [model.tokenize([row[column] for row in rows]) for column in ("query", "positive", "negative")]


def _fit(job: dict[str, Any]) -> dict[str, Any]:
    """`fit_projections` as `torchrun ... fit` runs it, recording the corpus texts this rank encoded and the
    folders it wrote."""
    from hf_dumpembed.projections import encode, fit

    calls: list[list[str]] = []
    written: list[str] = []
    iter_pooled, write_folder = encode.iter_pooled, fit.write_folder

    def spy_iter_pooled(model: Any, tokenizer: Any, texts: list[str], *args: Any, **kwargs: Any) -> Any:
        calls.append(list(texts))
        yield from iter_pooled(model, tokenizer, texts, *args, **kwargs)

    def spy_write_folder(*args: Any, **kwargs: Any) -> Path:
        written.append(str(args[2]))
        return write_folder(*args, **kwargs)

    encode.iter_pooled, fit.write_folder = spy_iter_pooled, spy_write_folder
    try:
        fit.fit_projections(job["model"], job["targets"], corpus=job["corpus"])
    finally:
        encode.iter_pooled, fit.write_folder = iter_pooled, write_folder
    return {"corpus_encoded": calls[0], "written": written}


def _loss(rank: int, world: int, job: dict[str, Any], name: str) -> dict[str, Any]:
    """The training loss (`make_loss`, gathering across processes) on this rank's share of the batch, backward,
    then the gradients averaged over ranks as DistributedDataParallel does."""
    import torch.distributed as dist

    from hf_dumpembed.training.trainer import make_loss

    model = perturbed_model(job["dump_model"])
    loss_fn = make_loss(model, job["configs"][name], world)
    share = len(job["rows"]) // world
    loss = loss_fn(features(model, job["rows"][rank * share : (rank + 1) * share]), None)
    loss.backward()
    value = loss.detach().clone()
    dist.all_reduce(value)
    grads = {}
    for parameter_name, parameter in model.named_parameters():
        if parameter.grad is not None:
            grad = parameter.grad.clone()
            dist.all_reduce(grad)
            grads[parameter_name] = grad / world
    return {"loss": float(value) / world, "local_loss": float(loss.detach()), "grads": grads,
            "gather": bool(loss_fn.gather_across_devices)}


def whole_batch_loss(model_dir: Path, rows: list[dict[str, str]]) -> dict[str, Any]:
    """The plain InfoNCE (scale 20, in-batch + hard negatives) of one process on the whole batch, backward."""
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    model = perturbed_model(model_dir)
    loss = MultipleNegativesRankingLoss(model, scale=20.0)(features(model, rows), None)
    loss.backward()
    return {"loss": float(loss.detach()),
            "grads": {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}}


def worker(rank: int, world: int, port: int, job: dict[str, Any]) -> None:
    import torch.distributed as dist

    torch.set_num_threads(1)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        fitted = _fit(job)
        dist.barrier()
        losses = {name: _loss(rank, world, job, name) for name in job["configs"]}
    finally:
        dist.destroy_process_group()
    if rank == 0:  # the one-process reference, in a process set up as the ranks are (threads, fresh imports)
        losses["whole_batch"] = whole_batch_loss(job["dump_model"], job["rows"])
    out = Path(job["out"])
    (out / f"fit.{rank}.json").write_text(json.dumps(fitted))
    torch.save(losses, out / f"loss.{rank}.pt")
