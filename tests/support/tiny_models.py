"""Tiny random backbones with real tokenizers, built locally (no Hub): BERT/WordPiece and byte-level BPE decoders.

Each saved folder reproduces a trap of real checkpoints: BERT saves ``tokenizer_class: BertTokenizer`` (which
rebuilds its template on load), the Llama tokenizer carries ``add_bos_token`` and a chat template.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
from transformers import (
    BertConfig,
    BertModel,
    GPT2Config,
    GPT2LMHeadModel,
    LlamaConfig,
    LlamaForCausalLM,
    PreTrainedTokenizerFast,
    Qwen2Config,
    Qwen2ForCausalLM,
)

CORPUS = [
    "A man is eating food.",
    "A man is eating a piece of bread.",
    "The girl is carrying a baby.",
    "A man is riding a horse.",
    "A woman is playing the violin.",
    "Two men pushed carts through the woods.",
    "A man is riding a white horse on an enclosed ground.",
    "A monkey is playing drums.",
    "Someone in a gorilla costume is playing a set of drums.",
    "Retrieval models map queries and documents into one vector space.",
    "The quick brown fox jumps over the lazy dog.",
    "Open the file, read every line, and close it again.",
    "Dense retrieval ranks passages by cosine similarity of their embeddings.",
    "Special tokens give attention somewhere harmless to go.",
    "hello world second text",
] * 8
HIDDEN = 32
MAX_POSITIONS = 128


def _train(tokenizer: Tokenizer, trainer: trainers.Trainer) -> Tokenizer:
    tokenizer.train_from_iterator(CORPUS, trainer=trainer)
    return tokenizer


def _patch_tokenizer_config(folder: Path, **updates: object) -> None:
    path = folder / "tokenizer_config.json"
    config = json.loads(path.read_text())
    config.update(updates)
    path.write_text(json.dumps(config, indent=2))


def wordpiece_tokenizer() -> PreTrainedTokenizerFast:
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece()
    _train(tok, trainers.WordPieceTrainer(vocab_size=200, special_tokens=specials))
    cls_id, sep_id = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls_id), ("[SEP]", sep_id)],
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]", sep_token="[SEP]",
        mask_token="[MASK]", model_input_names=["input_ids", "token_type_ids", "attention_mask"],
    )


def byte_level_tokenizer(bos: str | None) -> PreTrainedTokenizerFast:
    specials = ["<|endoftext|>"] + ([bos] if bos else [])
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    _train(tok, trainers.BpeTrainer(vocab_size=300, special_tokens=specials,
                                    initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    if bos:  # Llama-3 style: BOS in front of every sequence
        bos_id = tok.token_to_id(bos)
        tok.post_processor = processors.Sequence([
            processors.ByteLevel(trim_offsets=False),
            processors.TemplateProcessing(single=f"{bos} $A", pair=f"{bos} $A {bos}:1 $B:1",
                                          special_tokens=[(bos, bos_id)]),
        ])
    else:  # GPT-2 / Qwen2 style: nothing added
        tok.post_processor = processors.ByteLevel(trim_offsets=False)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token=bos or "<|endoftext|>", eos_token="<|endoftext|>", pad_token="<|endoftext|>",
        unk_token="<|endoftext|>",
    )


def metaspace_tokenizer() -> PreTrainedTokenizerFast:
    """A SentencePiece-style BPE (Metaspace pre-tokenizer): not supported yet."""
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.decoder = decoders.Metaspace()
    _train(tok, trainers.BpeTrainer(vocab_size=200, special_tokens=["<unk>", "<s>", "</s>"]))
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", bos_token="<s>", eos_token="</s>")


def save_tiny_bert(folder: Path, hidden: int = HIDDEN, max_positions: int = MAX_POSITIONS) -> Path:
    """A random 2-layer BERT with the WordPiece tokenizer (``hidden`` wide, ``max_positions`` positions)."""
    torch.manual_seed(0)
    tokenizer = wordpiece_tokenizer()
    config = BertConfig(
        vocab_size=len(tokenizer), hidden_size=hidden, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=2 * hidden, max_position_embeddings=max_positions, hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    BertModel(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    _patch_tokenizer_config(folder, tokenizer_class="BertTokenizer", do_lower_case=True)
    return folder


def save_tiny_llama(folder: Path) -> Path:
    torch.manual_seed(1)
    tokenizer = byte_level_tokenizer(bos="<|begin_of_text|>")
    config = LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=HIDDEN, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, intermediate_size=64, max_position_embeddings=MAX_POSITIONS,
        tie_word_embeddings=True, bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
    )
    LlamaForCausalLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    _patch_tokenizer_config(
        folder, add_bos_token=True, add_eos_token=False,
        chat_template="{% for m in messages %}{{ m['content'] }}{% endfor %}",
    )
    return folder


def save_tiny_gpt2(folder: Path) -> Path:
    torch.manual_seed(2)
    tokenizer = byte_level_tokenizer(bos=None)
    config = GPT2Config(vocab_size=len(tokenizer), n_embd=HIDDEN, n_layer=2, n_head=4, n_positions=MAX_POSITIONS,
                        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    GPT2LMHeadModel(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def save_tiny_qwen2(folder: Path, padded_rows: int = 16) -> Path:
    """Qwen2 with an embedding matrix larger than the tokenizer (as real Qwen2 checkpoints have)."""
    torch.manual_seed(3)
    tokenizer = byte_level_tokenizer(bos=None)
    config = Qwen2Config(
        vocab_size=len(tokenizer) + padded_rows, hidden_size=HIDDEN, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, intermediate_size=64, max_position_embeddings=MAX_POSITIONS, tie_word_embeddings=True,
    )
    Qwen2ForCausalLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def as_sentence_transformers_folder(backbone: Path, out: Path, mode: str = "mean_tokens") -> Path:
    """A copy of ``backbone`` with the sentence-transformers files of a model whose Pooling uses ``mode``
    (``mean_tokens``, ``cls_token``, ``lasttoken``, ``max_tokens``), as all-MiniLM-L6-v2 ships them."""
    import json
    import shutil

    shutil.copytree(backbone, out)
    (out / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
    ]))
    (out / "2_Normalize").mkdir()
    (out / "1_Pooling").mkdir()
    hidden = json.loads((backbone / "config.json").read_text())["hidden_size"]
    flags = {f"pooling_mode_{name}": name == mode for name in ("cls_token", "mean_tokens", "max_tokens", "lasttoken")}
    (out / "1_Pooling" / "config.json").write_text(json.dumps({"word_embedding_dimension": hidden, **flags}))
    return out
