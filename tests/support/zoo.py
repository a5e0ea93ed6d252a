"""A model zoo: tiny random replicas of the embedding-model families users bring, built offline.

Each `Family` replicates one public model: the real backbone class (2 layers, hidden 32), the real tokenizer *family*
(tests/support/zoo_tokenizers.py, or the WordPiece / byte-level helpers of tests/support/tiny_models.py) and the real
sentence-transformers module stack (Pooling mode, include_prompt, Dense layers, Normalize, prompts, default_prompt_name,
similarity), saved by sentence-transformers itself (`SentenceTransformer(modules=...).save`), so the folder is what a
user's fine-tuned copy of that model looks like today (the ``pooling_mode`` config format). Families whose real folders
were saved by sentence-transformers 2.x/3.x get their ``1_Pooling/config.json`` and ``modules.json`` rewritten in that
legacy form (``pooling_mode_*_tokens`` booleans, ``sentence_transformers.models.*`` class paths), as those repos ship
them.

Where each fact comes from is noted next to it (public repository / model names). `Family.supported` says what
`hf_dumpembed.model.builder.build` must do with the folder: reproduce its vectors, or refuse it with a ValueError
whose message contains every word of `Family.refusal_words`.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

import torch
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
from transformers import PreTrainedModel, PreTrainedTokenizerBase, PreTrainedTokenizerFast

from tests.support import tiny_models, zoo_tokenizers

HIDDEN = 32
LAYERS = 2
HEADS = 4
INTERMEDIATE = 64
MAX_POSITIONS = 128
# sentence-transformers' max_seq_length of every replica: the ~200-token probe text is truncated.
MAX_SEQ_LENGTH = 64

# Legacy Pooling keys. sentence-transformers 2.x wrote the first four (all-MiniLM-L6-v2, all-mpnet-base-v2,
# bge-small-en-v1.5, gtr-t5-base); 3.x wrote all six plus include_prompt (Qwen3-Embedding-0.6B).
_LEGACY_KEYS_V2 = ("cls_token", "mean_tokens", "max_tokens", "mean_sqrt_len_tokens")
_LEGACY_KEYS_V3 = _LEGACY_KEYS_V2 + ("weightedmean_tokens", "lasttoken")
_LEGACY_NAME = {"cls": "cls_token", "mean": "mean_tokens", "max": "max_tokens",
                "mean_sqrt_len_tokens": "mean_sqrt_len_tokens", "weightedmean": "weightedmean_tokens",
                "lasttoken": "lasttoken"}


@dataclass(frozen=True)
class DenseSpec:
    """One sentence-transformers Dense layer after Pooling."""

    out_features: int
    bias: bool
    activation: str = "identity"  # "identity" or "tanh"


@dataclass(frozen=True)
class Family:
    """One replicated model family and what the builder must do with it."""

    name: str
    replicates: str  # the public model (Hub id) whose stack and tokenizer family this copies
    backbone_class: str  # the transformers class the checkpoint is saved as
    tokenizer_family: str
    make_tokenizer: Callable[[], PreTrainedTokenizerBase]
    make_backbone: Callable[[PreTrainedTokenizerBase], PreTrainedModel]
    pooling: str | tuple[str, ...]  # sentence-transformers Pooling mode(s)
    decoder: bool
    pooling_format: str = "new"  # "new" (pooling_mode), "legacy2" (ST 2.x booleans), "legacy3" (ST 3.x booleans)
    include_prompt: bool = True
    dense: tuple[DenseSpec, ...] = ()
    normalize: bool = True
    prompts: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    default_prompt_name: str | None = None
    similarity_fn_name: str = "cosine"
    leading_special: bool = True  # the tokenizer puts a special token ([CLS], <s>, <bos>) before the text
    supported: bool = True
    refusal_words: tuple[str, ...] = ()
    config_updates: Mapping[str, object] = field(default_factory=lambda: MappingProxyType({}))
    tokenizer_config_updates: Mapping[str, object] = field(default_factory=lambda: MappingProxyType({}))
    seed: int = 0

    @property
    def dimension(self) -> int:
        """The sentence-embedding dimension the stack gives."""
        if self.dense:
            return self.dense[-1].out_features
        return HIDDEN * (len(self.pooling) if isinstance(self.pooling, tuple) else 1)

    def save(self, folder: Path) -> Path:
        """Write the complete source folder (backbone + tokenizer + sentence-transformers stack) to ``folder``."""
        from sentence_transformers import SentenceTransformer
        from sentence_transformers.sentence_transformer.modules import Dense, Normalize, Pooling, Transformer

        folder = Path(folder)
        torch.manual_seed(self.seed)
        tokenizer = self.make_tokenizer()
        backbone = self.make_backbone(tokenizer).eval()
        with tempfile.TemporaryDirectory(prefix=f"zoo-{self.name}-") as staging:
            backbone.save_pretrained(staging)
            tokenizer.save_pretrained(staging)
            _patch_json(Path(staging) / "config.json", self.config_updates)
            modules: list[torch.nn.Module] = [Transformer(staging, max_seq_length=MAX_SEQ_LENGTH)]
            modules.append(Pooling(HIDDEN, pooling_mode=self.pooling, include_prompt=self.include_prompt))
            width = modules[-1].get_embedding_dimension()
            for spec in self.dense:
                activation = torch.nn.Tanh() if spec.activation == "tanh" else torch.nn.Identity()
                modules.append(Dense(width, spec.out_features, bias=spec.bias, activation_function=activation))
                width = spec.out_features
            if self.normalize:
                modules.append(Normalize())
            model = SentenceTransformer(
                modules=modules, device="cpu", prompts=dict(self.prompts),
                default_prompt_name=self.default_prompt_name, similarity_fn_name=self.similarity_fn_name,
            )
            model.save(str(folder))
        _patch_json(folder / "config.json", self.config_updates)  # the Transformer module re-saves config.json
        _patch_json(folder / "tokenizer_config.json", self.tokenizer_config_updates)
        if self.pooling_format != "new":
            _write_legacy_pooling(folder, self)
        return folder


def _patch_json(path: Path, updates: Mapping[str, object]) -> None:
    if not updates:
        return
    data = json.loads(path.read_text(encoding="utf-8"))
    data.update(updates)
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")


def _write_legacy_pooling(folder: Path, family: Family) -> None:
    """Rewrite the Pooling config and modules.json as sentence-transformers 2.x/3.x saved them."""
    modes = family.pooling if isinstance(family.pooling, tuple) else (family.pooling,)
    keys = _LEGACY_KEYS_V2 if family.pooling_format == "legacy2" else _LEGACY_KEYS_V3
    if any(_LEGACY_NAME[mode] not in keys for mode in modes):
        raise ValueError(f"{family.name}: {modes} cannot be written in the {family.pooling_format} format.")
    config: dict[str, object] = {"word_embedding_dimension": HIDDEN}
    config.update({f"pooling_mode_{key}": key in {_LEGACY_NAME[m] for m in modes} for key in keys})
    if family.pooling_format == "legacy3":
        config["include_prompt"] = family.include_prompt
    modules_path = folder / "modules.json"
    modules = json.loads(modules_path.read_text(encoding="utf-8"))
    for module in modules:
        module["type"] = "sentence_transformers.models." + module["type"].rsplit(".", 1)[-1]
        if module["type"].endswith("Pooling"):
            (folder / module["path"] / "config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
    modules_path.write_text(json.dumps(modules, indent=2), encoding="utf-8")
    # sentence-transformers < 5 kept max_seq_length here (5+ keeps it in the tokenizer's model_max_length).
    (folder / "sentence_bert_config.json").write_text(
        json.dumps({"max_seq_length": MAX_SEQ_LENGTH, "do_lower_case": False}, indent=2), encoding="utf-8")


# --- tokenizers not in zoo_tokenizers -------------------------------------------------------------------------


def bert_wordpiece_tokenizer() -> PreTrainedTokenizerBase:
    """BERT's uncased WordPiece, ``[CLS] $A [SEP]`` (bge-small-en-v1.5, e5-small-v2, LaBSE, all-MiniLM-L6-v2)."""
    return tiny_models.wordpiece_tokenizer()


def mpnet_tokenizer() -> PreTrainedTokenizerBase:
    """MPNet's WordPiece (all-mpnet-base-v2): lowercasing, fairseq-style ids (``<s>``=0, ``<pad>``=1, ``</s>``=2),
    ``<s> $A </s>``, no token_type_ids."""
    specials = ["<s>", "<pad>", "</s>", "[UNK]", "<mask>"]
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece()
    tok.train_from_iterator(tiny_models.CORPUS, trainer=trainers.WordPieceTrainer(vocab_size=200,
                                                                                   special_tokens=specials))
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", pair="<s> $A </s> </s> $B </s>",
        special_tokens=[("<s>", tok.token_to_id("<s>")), ("</s>", tok.token_to_id("</s>"))],
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<s>", eos_token="</s>", cls_token="<s>", sep_token="</s>",
        unk_token="[UNK]", pad_token="<pad>", mask_token="<mask>", model_input_names=["input_ids", "attention_mask"],
    )


def llama3_tokenizer() -> PreTrainedTokenizerBase:
    """Llama-3 style byte-level BPE with ``<|begin_of_text|>`` in front of every text (tests/support/tiny_models.py)."""
    return tiny_models.byte_level_tokenizer(bos="<|begin_of_text|>")


def gpt2_tokenizer() -> PreTrainedTokenizerBase:
    """GPT-2 / GPT-Neo byte-level BPE adding nothing (SGPT); padded with ``<|endoftext|>``."""
    return tiny_models.byte_level_tokenizer(bos=None)


def mistral_eos_tokenizer() -> PreTrainedTokenizerBase:
    """e5-mistral-7b-instruct: the Llama-2 SentencePiece BPE appending ``</s>``; padded with ``</s>`` (Llama-2
    has no pad token; sentence-transformers needs one to batch)."""
    tokenizer = zoo_tokenizers.llama2_tokenizer(append_eos=True)
    tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def embeddinggemma_tokenizer() -> PreTrainedTokenizerBase:
    """EmbeddingGemma: the Gemma 3 SentencePiece BPE with ``<bos> $A <eos>`` (its tokenizer_config.json sets
    add_bos_token and add_eos_token)."""
    return zoo_tokenizers.gemma_tokenizer(append_eos=True)


# --- backbones --------------------------------------------------------------------------------------------------


def _common(tokenizer: PreTrainedTokenizerBase) -> dict[str, object]:
    return {"vocab_size": len(tokenizer), "pad_token_id": tokenizer.pad_token_id}


def bert(tokenizer: PreTrainedTokenizerBase) -> PreTrainedModel:
    from transformers import BertConfig, BertModel

    return BertModel(BertConfig(
        **_common(tokenizer), hidden_size=HIDDEN, num_hidden_layers=LAYERS, num_attention_heads=HEADS,
        intermediate_size=INTERMEDIATE, max_position_embeddings=MAX_POSITIONS, hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    ))


def mpnet(tokenizer: PreTrainedTokenizerBase) -> PreTrainedModel:
    from transformers import MPNetConfig, MPNetModel

    return MPNetModel(MPNetConfig(
        **_common(tokenizer), hidden_size=HIDDEN, num_hidden_layers=LAYERS, num_attention_heads=HEADS,
        intermediate_size=INTERMEDIATE, max_position_embeddings=MAX_POSITIONS + 2, hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0, bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
    ))


def xlm_roberta(tokenizer: PreTrainedTokenizerBase) -> PreTrainedModel:
    from transformers import XLMRobertaConfig, XLMRobertaModel

    # position ids start after the padding index, as in the real checkpoints (max_position_embeddings = 514).
    return XLMRobertaModel(XLMRobertaConfig(
        **_common(tokenizer), hidden_size=HIDDEN, num_hidden_layers=LAYERS, num_attention_heads=HEADS,
        intermediate_size=INTERMEDIATE, max_position_embeddings=MAX_POSITIONS + 2, type_vocab_size=1,
        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    ))


def modernbert(tokenizer: PreTrainedTokenizerBase) -> PreTrainedModel:
    from transformers import ModernBertConfig, ModernBertModel

    return ModernBertModel(ModernBertConfig(
        **_common(tokenizer), hidden_size=HIDDEN, num_hidden_layers=LAYERS, num_attention_heads=HEADS,
        intermediate_size=INTERMEDIATE, max_position_embeddings=MAX_POSITIONS, global_attn_every_n_layers=2,
        local_attention=16, cls_token_id=tokenizer.cls_token_id, sep_token_id=tokenizer.sep_token_id,
        bos_token_id=tokenizer.cls_token_id, eos_token_id=tokenizer.sep_token_id,
    ))


def qwen3(tokenizer: PreTrainedTokenizerBase) -> PreTrainedModel:
    from transformers import Qwen3Config, Qwen3Model

    return Qwen3Model(Qwen3Config(
        **_common(tokenizer), hidden_size=HIDDEN, num_hidden_layers=LAYERS, num_attention_heads=HEADS,
        num_key_value_heads=2, head_dim=HIDDEN // HEADS, intermediate_size=INTERMEDIATE,
        max_position_embeddings=MAX_POSITIONS, tie_word_embeddings=True, eos_token_id=tokenizer.eos_token_id,
    ))


def mistral(tokenizer: PreTrainedTokenizerBase) -> PreTrainedModel:
    from transformers import MistralConfig, MistralModel

    return MistralModel(MistralConfig(
        **_common(tokenizer), hidden_size=HIDDEN, num_hidden_layers=LAYERS, num_attention_heads=HEADS,
        num_key_value_heads=2, head_dim=HIDDEN // HEADS, intermediate_size=INTERMEDIATE,
        max_position_embeddings=MAX_POSITIONS, bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    ))


def llama(tokenizer: PreTrainedTokenizerBase) -> PreTrainedModel:
    from transformers import LlamaConfig, LlamaForCausalLM

    return LlamaForCausalLM(LlamaConfig(
        **_common(tokenizer), hidden_size=HIDDEN, num_hidden_layers=LAYERS, num_attention_heads=HEADS,
        num_key_value_heads=2, intermediate_size=INTERMEDIATE, max_position_embeddings=MAX_POSITIONS,
        tie_word_embeddings=True, bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
    ))


def gpt_neo(tokenizer: PreTrainedTokenizerBase) -> PreTrainedModel:
    from transformers import GPTNeoConfig, GPTNeoModel

    return GPTNeoModel(GPTNeoConfig(
        vocab_size=len(tokenizer), hidden_size=HIDDEN, num_layers=LAYERS, num_heads=HEADS,
        attention_types=[[["global", "local"], 1]], window_size=16, intermediate_size=INTERMEDIATE,
        max_position_embeddings=MAX_POSITIONS, embed_dropout=0.0, attention_dropout=0.0, resid_dropout=0.0,
        bos_token_id=tokenizer.eos_token_id, eos_token_id=tokenizer.eos_token_id,
    ))


def gemma3_text(tokenizer: PreTrainedTokenizerBase) -> PreTrainedModel:
    from transformers import Gemma3TextConfig, Gemma3TextModel

    # EmbeddingGemma's config.json: Gemma3TextModel with use_bidirectional_attention true.
    return Gemma3TextModel(Gemma3TextConfig(
        **_common(tokenizer), hidden_size=HIDDEN, num_hidden_layers=LAYERS, num_attention_heads=HEADS,
        num_key_value_heads=1, head_dim=HIDDEN // HEADS, intermediate_size=INTERMEDIATE,
        max_position_embeddings=MAX_POSITIONS, sliding_window=16, query_pre_attn_scalar=HIDDEN // HEADS,
        use_bidirectional_attention=True, bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
    ))


def t5_encoder(tokenizer: PreTrainedTokenizerBase) -> PreTrainedModel:
    from transformers import T5Config, T5EncoderModel

    return T5EncoderModel(T5Config(
        **_common(tokenizer), d_model=HIDDEN, d_kv=HIDDEN // HEADS, d_ff=INTERMEDIATE, num_layers=LAYERS,
        num_heads=HEADS, dropout_rate=0.0, eos_token_id=tokenizer.eos_token_id,
    ))


# --- the families -----------------------------------------------------------------------------------------------

# bge-small-en-v1.5 / mxbai-embed-large-v1 query instruction (BAAI/bge-small-en-v1.5 model card; the
# mixedbread-ai/mxbai-embed-large-v1 config_sentence_transformers.json ships it as the "query" prompt with an empty
# "passage" prompt).
BGE_QUERY = "Represent this sentence for searching relevant passages: "
# e5 prefixes (intfloat/e5-small-v2, intfloat/multilingual-e5-small model cards). The real repos ship NO saved
# prompts (users and mteb's ModelMeta pass model_prompts={"query": "query: ", "document": "passage: "}); the replicas
# carry them as a user's re-saved copy does, so that encode_query / encode_document differ.
E5_PROMPTS = MappingProxyType({"query": "query: ", "document": "passage: "})
# Qwen/Qwen3-Embedding-0.6B config_sentence_transformers.json (quoted verbatim by several public projects, e.g.
# hakari_bench's DEFAULT_QWEN3_PROMPTS): no space after "Query:", an empty document prompt, no default prompt.
QWEN3_PROMPTS = MappingProxyType({
    "query": "Instruct: Given a web search query, retrieve relevant passages that answer the query\nQuery:",
    "document": "",
})
# intfloat/e5-mistral-7b-instruct config_sentence_transformers.json: task-named "*_query" prompts only (no
# "query"/"document"), "Instruct: ...\nQuery: " with a trailing space (mteb's E5_INSTRUCTION template); a subset.
E5_MISTRAL_PROMPTS = MappingProxyType({
    "web_search_query": "Instruct: Given a web search query, retrieve relevant passages that answer the query\n"
                        "Query: ",
    "sts_query": "Instruct: Retrieve semantically similar text.\nQuery: ",
    "summarization_query": "Instruct: Given a news summary, retrieve other semantically similar summaries\nQuery: ",
})
# google/embeddinggemma-300m config_sentence_transformers.json, as `print(model.prompts)` shows it in the
# Hugging Face EmbeddingGemma blog post and model card; default_prompt_name null.
EMBEDDINGGEMMA_PROMPTS = MappingProxyType({
    "query": "task: search result | query: ",
    "document": "title: none | text: ",
    "BitextMining": "task: search result | query: ",
    "Clustering": "task: clustering | query: ",
    "Classification": "task: classification | query: ",
    "InstructionRetrieval": "task: code retrieval | query: ",
    "MultilabelClassification": "task: classification | query: ",
    "PairClassification": "task: sentence similarity | query: ",
    "Reranking": "task: search result | query: ",
    "Retrieval-query": "task: search result | query: ",
    "Retrieval-document": "title: none | text: ",
    "STS": "task: sentence similarity | query: ",
    "Summarization": "task: summarization | query: ",
})
# INSTRUCTOR-style instructions (hkunlp/instructor-large model card), pooled without the instruction tokens
# (sentence-transformers' Pooling docs name INSTRUCTOR as the include_prompt=False use case).
INSTRUCTOR_PROMPTS = MappingProxyType({
    "query": "Represent the Wikipedia question for retrieving supporting documents: ",
    "document": "Represent the Wikipedia document for retrieval: ",
})
# BERT checkpoints save tokenizer_class BertTokenizer, which rebuilds its template on load.
_BERT_TOKENIZER_CONFIG = MappingProxyType({"tokenizer_class": "BertTokenizer", "do_lower_case": True})

_FAMILIES = [
    # BAAI/bge-small-en-v1.5: modules.json Transformer, Pooling, Normalize; 1_Pooling/config.json
    # pooling_mode_cls_token true in the 4-key sentence-transformers 2.x format (model card: "CLS pooling"; mteb and
    # third-party loaders read cls from it).
    Family("bge-small-en-v1.5", "BAAI/bge-small-en-v1.5", "BertModel", "WordPiece", bert_wordpiece_tokenizer, bert,
           pooling="cls", decoder=False, pooling_format="legacy2",
           prompts=MappingProxyType({"query": BGE_QUERY, "passage": ""}),
           tokenizer_config_updates=_BERT_TOKENIZER_CONFIG, seed=1),
    # sentence-transformers/all-mpnet-base-v2: Transformer, Pooling (mean, ST 2.x booleans), Normalize.
    Family("all-mpnet-base-v2", "sentence-transformers/all-mpnet-base-v2", "MPNetModel", "WordPiece (MPNet)",
           mpnet_tokenizer, mpnet, pooling="mean", decoder=False, pooling_format="legacy2", seed=2),
    # intfloat/e5-small-v2: BertModel, mean pooling (model card's average_pool), Normalize.
    Family("e5-small-v2", "intfloat/e5-small-v2", "BertModel", "WordPiece", bert_wordpiece_tokenizer, bert,
           pooling="mean", decoder=False, prompts=E5_PROMPTS, tokenizer_config_updates=_BERT_TOKENIZER_CONFIG,
           seed=3),
    # BAAI/bge-m3: XLMRobertaModel, cls pooling, Normalize, no prompts.
    Family("bge-m3", "BAAI/bge-m3", "XLMRobertaModel", "SentencePiece Unigram (XLM-R)",
           zoo_tokenizers.xlmr_tokenizer, xlm_roberta, pooling="cls", decoder=False, seed=4),
    # intfloat/multilingual-e5-small: XLMRobertaModel, mean, Normalize, e5 prefixes.
    Family("multilingual-e5-small", "intfloat/multilingual-e5-small", "XLMRobertaModel",
           "SentencePiece Unigram (XLM-R)", zoo_tokenizers.xlmr_tokenizer, xlm_roberta, pooling="mean",
           decoder=False, prompts=E5_PROMPTS, seed=5),
    # Alibaba-NLP/gte-modernbert-base: ModernBertModel, cls pooling (its 1_Pooling/config.json, as the kohagi README
    # and other sentence-transformers-based loaders read it), Normalize (not verified in the index).
    Family("gte-modernbert-base", "Alibaba-NLP/gte-modernbert-base", "ModernBertModel", "byte-level BPE (OLMo)",
           zoo_tokenizers.modernbert_tokenizer, modernbert, pooling="cls", decoder=False, seed=6),
    # Qwen/Qwen3-Embedding-0.6B: 1_Pooling/config.json has all six ST 3.x booleans with pooling_mode_lasttoken true
    # and include_prompt true; config.json says Qwen3ForCausalLM although the weights are the bare Qwen3Model's
    # (no "model." prefix); the tokenizer appends <|endoftext|> and pads left; Normalize.
    Family("qwen3-embedding", "Qwen/Qwen3-Embedding-0.6B", "Qwen3Model", "byte-level BPE (Qwen2), appends EOS",
           zoo_tokenizers.qwen3_tokenizer, qwen3, pooling="lasttoken", decoder=True, pooling_format="legacy3",
           prompts=QWEN3_PROMPTS, leading_special=False,
           config_updates=MappingProxyType({"architectures": ["Qwen3ForCausalLM"]}), seed=7),
    # intfloat/e5-mistral-7b-instruct: config.json architectures MistralModel; last-token pooling with </s>
    # appended (add_eos_token; packaging lesson: transformers 5 ignores the flag once tokenizer.json exists);
    # task-named instruction prompts; Normalize.
    Family("e5-mistral-7b-instruct", "intfloat/e5-mistral-7b-instruct", "MistralModel",
           "SentencePiece BPE (Llama-2, byte fallback), appends EOS", mistral_eos_tokenizer, mistral,
           pooling="lasttoken", decoder=True, prompts=E5_MISTRAL_PROMPTS,
           tokenizer_config_updates=MappingProxyType({"tokenizer_class": "LlamaTokenizer", "add_bos_token": True,
                                                      "add_eos_token": True, "padding_side": "left"}), seed=8),
    # google/embeddinggemma-300m: Gemma3TextModel (bidirectional), mean pooling, 2_Dense 768->3072 and 3_Dense
    # 3072->768 both bias false with torch.nn.modules.linear.Identity (public configs quoted in embed_bench's and
    # mistral.rs-style loaders' fixtures), Normalize; shrunk here to 32->128->32.
    Family("embeddinggemma-300m", "google/embeddinggemma-300m", "Gemma3TextModel",
           "SentencePiece BPE (Gemma 3, byte fallback)", embeddinggemma_tokenizer, gemma3_text, pooling="mean",
           decoder=False, dense=(DenseSpec(4 * HIDDEN, bias=False), DenseSpec(HIDDEN, bias=False)),
           prompts=EMBEDDINGGEMMA_PROMPTS, seed=9),
    # A Llama-3 decoder (meta-llama/Llama-3.2-1B) made an embedder with sentence-transformers: built from the
    # LlamaForCausalLM checkpoint, re-saved by the Transformer module as the bare LlamaModel; byte-level BPE with
    # <|begin_of_text|> in front and nothing appended, last-token pooling, Normalize.
    Family("llama-3", "meta-llama/Llama-3.2-1B", "LlamaModel", "byte-level BPE (Llama-3, BOS)",
           llama3_tokenizer, llama, pooling="lasttoken", decoder=True, seed=10),
    # sentence-transformers/gtr-t5-base: T5EncoderModel (fp16 weights in the real repo), mean pooling (ST 2.x
    # booleans), 2_Dense 768->768 bias false Identity, Normalize.
    Family("gtr-t5-base", "sentence-transformers/gtr-t5-base", "T5EncoderModel", "SentencePiece Unigram (T5)",
           zoo_tokenizers.t5_tokenizer, t5_encoder, pooling="mean", decoder=False, pooling_format="legacy2",
           dense=(DenseSpec(HIDDEN, bias=False),), leading_special=False, seed=11),
    # Muennighoff/SGPT-125M-weightedmean-nli-bitfit: GPTNeoModel (GPT-Neo-125M fine-tuned), position-weighted mean
    # pooling, loaded by SentenceTransformer in the Muennighoff/sgpt README and mteb scripts; no Normalize. Saved by
    # SGPT's own sentence-transformers 2.x fork: the boolean format with a weightedmean key (exact key set of the real
    # 1_Pooling/config.json not verified here).
    Family("sgpt-weightedmean", "Muennighoff/SGPT-125M-weightedmean-nli-bitfit", "GPTNeoModel",
           "byte-level BPE (GPT-2)", gpt2_tokenizer, gpt_neo, pooling="weightedmean", decoder=True,
           pooling_format="legacy3", normalize=False, leading_special=False, similarity_fn_name="cosine", seed=12),
    # INSTRUCTOR-style include_prompt=False on an e5-small-v2 BERT mean stack.
    Family("instructor-style-e5", "hkunlp/instructor-large (include_prompt=False) on intfloat/e5-small-v2",
           "BertModel", "WordPiece", bert_wordpiece_tokenizer, bert, pooling="mean", decoder=False,
           include_prompt=False, prompts=INSTRUCTOR_PROMPTS, tokenizer_config_updates=_BERT_TOKENIZER_CONFIG,
           seed=13),
    # sentence-transformers/LaBSE: BertModel, cls pooling, 2_Dense 768->768 with bias and
    # torch.nn.modules.activation.Tanh (its 2_Dense/config.json, as the public copy mxLiew/multilingual_labse
    # holds it), Normalize. Not linear: the builder must refuse it.
    Family("labse", "sentence-transformers/LaBSE", "BertModel", "WordPiece", bert_wordpiece_tokenizer, bert,
           pooling="cls", decoder=False, dense=(DenseSpec(HIDDEN, bias=True, activation="tanh"),),
           tokenizer_config_updates=_BERT_TOKENIZER_CONFIG, supported=False,
           refusal_words=("Dense", "Tanh", "--pooling"), seed=14),
    # Two pooling modes concatenated (cls + mean, a Pooling(pooling_mode=("cls", "mean"))) on an all-MiniLM-L6-v2
    # style BERT: one vector of twice the width, which a single-mode DumpEmbed pooling cannot give.
    Family("cls-mean-concat", "sentence-transformers/all-MiniLM-L6-v2 with Pooling(('cls', 'mean'))", "BertModel",
           "WordPiece", bert_wordpiece_tokenizer, bert, pooling=("cls", "mean"), decoder=False,
           tokenizer_config_updates=_BERT_TOKENIZER_CONFIG, supported=False,
           refusal_words=("cls", "mean", "--pooling"), seed=15),
]
FAMILIES: dict[str, Family] = {family.name: family for family in _FAMILIES}
SUPPORTED = [name for name, family in FAMILIES.items() if family.supported]
REFUSED = [name for name, family in FAMILIES.items() if not family.supported]

# Texts of mixed length for equivalence tests: short, unicode, and one of ~200 tokens (truncated at 64).
TEXTS = [
    "hello world",
    "A man is riding a white horse on an enclosed ground.",
    "Ünïcödé façade naïve café — 東京 😀",
    " ".join(tiny_models.CORPUS[:15]),  # ~150 words: truncated at MAX_SEQ_LENGTH
]

