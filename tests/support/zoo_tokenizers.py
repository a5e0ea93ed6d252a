"""Offline, tiny versions of the tokenizer families real embedding models ship, built the way the real ones are.

SentencePiece families are trained with the ``sentencepiece`` package (Unigram for XLM-R and T5, BPE with byte
fallback for Llama-2/Mistral and Gemma) and converted by transformers' own classes, exactly as transformers converts
a checkpoint's ``.model`` file when it has no ``tokenizer.json``. The byte-level BPE families are trained with
``tokenizers`` and given the pre-tokenizer and post-processor their real counterparts carry. Vocabularies are a few
hundred pieces; everything is deterministic and needs no network. The trained ``.model`` files are cached once per
process in a temporary folder, so each factory call costs only the conversion (a few milliseconds).

=====================  ==========================================  =================================================
factory                real counterpart(s)                         what it reproduces
=====================  ==========================================  =================================================
``xlmr_tokenizer``     bge-m3, multilingual-e5-*, paraphrase-      SentencePiece Unigram, Precompiled normalizer,
                       multilingual-mpnet (XLM-RoBERTa)            Metaspace, ``<s> $A </s>``
``t5_tokenizer``       gtr-t5-*, sentence-t5-* (T5)                Unigram + Metaspace, no BOS, appends ``</s>``
``llama2_tokenizer``   e5-mistral-7b-instruct, SFR-Embedding-      SentencePiece BPE + byte fallback, Metaspace
                       Mistral, LLM2Vec (Llama-2 / Mistral)        (prepend "first"), ``<s> $A`` (``</s>`` appended
                                                                   with ``append_eos=True``, as those embedders do)
``gemma_tokenizer``    EmbeddingGemma (Gemma 3 tokenizer)          SentencePiece BPE + byte fallback, no Metaspace
                                                                   (Replace normalizer, Split on spaces), ``<bos>``
``qwen3_tokenizer``    Qwen3-Embedding-0.6B/4B/8B                  byte-level BPE (NFC, regex Split + ByteLevel),
                                                                   ``$A <|endoftext|>``, left padding
``modernbert_tokenizer`` gte-modernbert-base, ModernBERT-embed     byte-level BPE, ``[CLS] $A [SEP]``
=====================  ==========================================  =================================================

``ZOO`` maps a family name to its factory (for ``pytest.mark.parametrize``); ``ZOO_FAMILIES`` describes what each
family's post-processor adds, so tests can assert it without hard-coding token strings.
"""

from __future__ import annotations

import inspect
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path

from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
from transformers import PreTrainedTokenizerBase, PreTrainedTokenizerFast

from tests.support.tiny_models import CORPUS

# Text beyond the tiny English CORPUS: accents, CJK, emoji (byte fallback), digits, repeated spaces, newlines.
_EXTRA_TEXT = [
    "Ünïcödé façade, naïve café — résumé. Straße, Ærøskøbing, İstanbul.",
    "東京は日本の首都です。北京是中国的首都。서울은 한국의 수도입니다.",
    "Emoji 😀🚀 and symbols ∑ ∫ ≤ ≥ → €100, £20, ¥3000.",
    "Numbers 12345 and 3.14159 and 2024-06-01 and 0x1F.",
    "  two leading spaces, trailing spaces   ",
    "tabs\tand\nnew lines\n\nand    runs of spaces",
    "def add(a, b):\n    return a + b  # code with indentation",
    "Привет, мир! Γειά σου κόσμε! مرحبا بالعالم",
]
# Whole docstrings of a few stable stdlib modules (real prose, some code): the rest of the training text.
_DOC_MODULES = ("json", "textwrap", "string", "difflib", "heapq", "bisect", "functools", "collections")

# Texts tests can run through every family: unicode, leading/trailing spaces, empty-ish, long.
PROBE_TEXTS = [
    "hello world",
    "A man is riding a white horse on an enclosed ground.",
    " leading space",
    "   three leading spaces and a trailing one ",
    "Ünïcödé façade naïve café — 東京 😀",
    "Llama 🦙 ꙮ",  # characters absent from the training text: byte fallback (or <unk> for Unigram)
    "tabs\tand\nnew lines",
    "x",
    "[DUMP] look-alike <s> </s> <|endoftext|> [CLS] text",
    " ".join(CORPUS[:15]) * 2,  # long: several hundred tokens
]


def training_text() -> list[str]:
    """The deterministic training lines: CORPUS (deduplicated), the extra unicode lines and stdlib docstrings."""
    import importlib

    lines = list(dict.fromkeys(CORPUS)) + _EXTRA_TEXT
    for name in _DOC_MODULES:
        doc = inspect.getdoc(importlib.import_module(name)) or ""
        lines.extend(line for line in doc.splitlines() if line.strip())
    return lines


@lru_cache(maxsize=1)
def _cache_dir() -> Path:
    """One temporary folder per process for the trained SentencePiece models (removed at exit)."""
    import atexit

    folder = Path(tempfile.mkdtemp(prefix="hf_dumpembed_zoo_"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


@cache
def _spm_model(name: str) -> Path:
    """Train (once per process) the SentencePiece model ``name`` with its real family's trainer settings."""
    import sentencepiece as spm

    common = dict(num_threads=1, minloglevel=2, shuffle_input_sentence=False, hard_vocab_limit=False,
                  character_coverage=1.0)
    settings: dict[str, dict[str, object]] = {
        # XLM-R's sentencepiece.bpe.model is a Unigram model with <unk>=0, <s>=1, </s>=2 (fairseq adds <pad>, <mask>).
        "xlmr": dict(model_type="unigram", vocab_size=400, unk_id=0, bos_id=1, eos_id=2, pad_id=-1),
        # T5's spiece.model: Unigram with <pad>=0, </s>=1, <unk>=2 and no BOS.
        "t5": dict(model_type="unigram", vocab_size=400, pad_id=0, eos_id=1, unk_id=2, bos_id=-1),
        # Llama-2 / Mistral tokenizer.model: BPE, byte fallback, digits split, whitespace kept, identity normalisation.
        "llama2": dict(model_type="bpe", vocab_size=600, byte_fallback=True, unk_id=0, bos_id=1, eos_id=2, pad_id=-1,
                       split_digits=True, allow_whitespace_only_pieces=True, remove_extra_whitespaces=False,
                       normalization_rule_name="identity"),
        # Gemma tokenizer.model: BPE, byte fallback, <pad>=0 <eos>=1 <bos>=2 <unk>=3, no dummy prefix.
        "gemma": dict(model_type="bpe", vocab_size=600, byte_fallback=True, pad_id=0, eos_id=1, bos_id=2, unk_id=3,
                      pad_piece="<pad>", eos_piece="<eos>", bos_piece="<bos>", unk_piece="<unk>",
                      user_defined_symbols=["<mask>", "<start_of_turn>", "<end_of_turn>"], split_digits=True,
                      add_dummy_prefix=False, allow_whitespace_only_pieces=True, remove_extra_whitespaces=False,
                      normalization_rule_name="identity"),
    }
    prefix = _cache_dir() / name
    spm.SentencePieceTrainer.train(sentence_iterator=iter(training_text()), model_prefix=str(prefix),
                                   **common, **settings[name])
    return prefix.with_suffix(".model")


def _folder_with(model_file: Path, file_name: str) -> Path:
    """A fresh folder holding only ``model_file`` under the name the tokenizer class looks for."""
    folder = Path(tempfile.mkdtemp(prefix=f"{model_file.stem}_", dir=_cache_dir()))
    shutil.copyfile(model_file, folder / file_name)
    return folder


def xlmr_tokenizer() -> PreTrainedTokenizerBase:
    """XLM-RoBERTa (bge-m3, multilingual-e5-small/base/large): Unigram + Metaspace, ``<s> $A </s>``.

    Built by ``XLMRobertaTokenizerFast.from_pretrained`` on a folder holding only ``sentencepiece.bpe.model``: the
    conversion transformers runs for a checkpoint without ``tokenizer.json`` (fairseq ids: ``<s>``=0, ``<pad>``=1,
    ``</s>``=2, ``<unk>``=3, ``<mask>`` last).
    """
    from transformers import XLMRobertaTokenizerFast

    folder = _folder_with(_spm_model("xlmr"), "sentencepiece.bpe.model")
    return XLMRobertaTokenizerFast.from_pretrained(str(folder))


def t5_tokenizer() -> PreTrainedTokenizerBase:
    """T5 (gtr-t5-base/large, sentence-t5-base): Unigram + Metaspace, no leading token, appends ``</s>``.

    Built by ``T5TokenizerFast.from_pretrained`` on a folder holding only ``spiece.model`` (with T5's 100
    ``<extra_id_*>`` sentinels appended, as the real tokenizer has them).
    """
    from transformers import T5TokenizerFast

    folder = _folder_with(_spm_model("t5"), "spiece.model")
    return T5TokenizerFast.from_pretrained(str(folder))


def llama2_tokenizer(append_eos: bool = False) -> PreTrainedTokenizerBase:
    """Llama-2 / Mistral-7B: SentencePiece BPE with byte fallback, Metaspace, ``<s> $A``, left padding, no pad token.

    ``append_eos=True`` gives ``<s> $A </s>``: what Mistral/Llama embedders (e5-mistral-7b-instruct,
    SFR-Embedding-Mistral) need, since they pool the last token and expect it to be EOS. Built by
    ``LlamaTokenizerFast.from_pretrained`` on a folder holding only ``tokenizer.model``, with ``add_bos_token`` /
    ``add_eos_token`` passed as those checkpoints' tokenizer_config.json does.
    """
    from transformers import LlamaTokenizerFast

    folder = _folder_with(_spm_model("llama2"), "tokenizer.model")
    return LlamaTokenizerFast.from_pretrained(str(folder), add_bos_token=True, add_eos_token=append_eos)


def gemma_tokenizer(append_eos: bool = False) -> PreTrainedTokenizerBase:
    """Gemma (EmbeddingGemma uses the Gemma 3 tokenizer): SentencePiece BPE with byte fallback, ``<bos> $A``.

    Gemma has no Metaspace: its normalizer replaces spaces by ``▁`` and its pre-tokenizer splits on spaces, and no
    dummy prefix is added. ``append_eos=True`` gives ``<bos> $A <eos>``. ``GemmaTokenizerFast`` lists no
    ``.model`` file of its own, so the SentencePiece model is passed as ``vocab_file`` to its conversion.
    """
    from transformers import GemmaTokenizerFast

    kwargs = GemmaTokenizerFast.convert_to_native_format(vocab_file=str(_spm_model("gemma")))
    return GemmaTokenizerFast(**kwargs, add_bos_token=True, add_eos_token=append_eos)


# Qwen2/Qwen3's pre-tokenizer regex (the tiktoken-style split), applied before the byte-level mapping.
_QWEN_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)


def _train_byte_level(tok: Tokenizer, specials: list[str], vocab_size: int) -> Tokenizer:
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=specials, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(training_text(), trainer=trainer)
    return tok


@cache
def _qwen3_json() -> str:
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(_QWEN_SPLIT), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)
    _train_byte_level(tok, ["<|endoftext|>", "<|im_start|>", "<|im_end|>"], vocab_size=500)
    eot = tok.token_to_id("<|endoftext|>")
    # Qwen3-Embedding's tokenizer.json appends <|endoftext|> (last-token pooling reads it); no ByteLevel processor.
    tok.post_processor = processors.TemplateProcessing(
        single="$A:0 <|endoftext|>:0", pair="$A:0 <|endoftext|>:0 $B:1 <|endoftext|>:1",
        special_tokens=[("<|endoftext|>", eot)],
    )
    return tok.to_str()


def qwen3_tokenizer() -> PreTrainedTokenizerBase:
    """Qwen3-Embedding (0.6B/4B/8B): byte-level BPE whose post-processor appends ``<|endoftext|>``; left padding.

    As in the real checkpoint, EOS is ``<|im_end|>`` while the appended token and the pad token are ``<|endoftext|>``.
    """
    return PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer.from_str(_qwen3_json()), eos_token="<|im_end|>", pad_token="<|endoftext|>",
        padding_side="left", extra_special_tokens=["<|im_start|>", "<|im_end|>"],
    )


@cache
def _modernbert_json() -> str:
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True)
    tok.decoder = decoders.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True)
    specials = ["<|padding|>", "<|endoftext|>", "[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]"]
    _train_byte_level(tok, specials, vocab_size=500)
    tok.add_special_tokens([AddedToken("[MASK]", lstrip=True, special=True)])
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS]:0 $A:0 [SEP]:0", pair="[CLS]:0 $A:0 [SEP]:0 $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls), ("[SEP]", sep)],
    )
    return tok.to_str()


def modernbert_tokenizer() -> PreTrainedTokenizerBase:
    """ModernBERT (gte-modernbert-base, modernbert-embed-base): byte-level BPE (OLMo-style), ``[CLS] $A [SEP]``."""
    return PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer.from_str(_modernbert_json()), cls_token="[CLS]", sep_token="[SEP]",
        pad_token="[PAD]", unk_token="[UNK]", mask_token="[MASK]",
    )


@dataclass(frozen=True)
class Family:
    """What a family's post-processor adds around one text: the leading and the appended special tokens."""

    make: Callable[[], PreTrainedTokenizerBase]
    leading: tuple[str, ...]
    appended: tuple[str, ...]
    kind: str  # the kind add_dump_tokens reports


ZOO_FAMILIES: dict[str, Family] = {
    "xlmr": Family(xlmr_tokenizer, ("<s>",), ("</s>",), "unigram"),
    "t5": Family(t5_tokenizer, (), ("</s>",), "unigram"),
    "llama2": Family(llama2_tokenizer, ("<s>",), (), "sentencepiece-bpe"),
    "mistral-eos": Family(lambda: llama2_tokenizer(append_eos=True), ("<s>",), ("</s>",), "sentencepiece-bpe"),
    "gemma": Family(gemma_tokenizer, ("<bos>",), (), "sentencepiece-bpe"),
    "qwen3": Family(qwen3_tokenizer, (), ("<|endoftext|>",), "byte-level-bpe"),
    "modernbert": Family(modernbert_tokenizer, ("[CLS]",), ("[SEP]",), "byte-level-bpe"),
}
ZOO: dict[str, Callable[[], PreTrainedTokenizerBase]] = {name: family.make for name, family in ZOO_FAMILIES.items()}
