"""The model on CUDA gives the CPU's vectors (skipped on a machine without a CUDA device)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from transformers import AutoModel, AutoTokenizer

TEXTS = ["A man is eating food.", "hello world second text", "Open the file, read every line."]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_the_model_runs_on_cuda_with_the_cpu_vectors(bert_dump_model: Path) -> None:
    model = AutoModel.from_pretrained(bert_dump_model, trust_remote_code=True).eval()
    tokenizer = AutoTokenizer.from_pretrained(str(bert_dump_model), trust_remote_code=True)
    batch = tokenizer(TEXTS, padding=True, return_tensors="pt")
    with torch.inference_mode():
        cpu = model(**batch).sentence_embedding.numpy()
        model = model.to("cuda")
        gpu = model(**{k: v.to("cuda") for k, v in batch.items()}).sentence_embedding.float().cpu().numpy()
    np.testing.assert_allclose(gpu, cpu, atol=1e-4)
