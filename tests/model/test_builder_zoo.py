"""The builder against the model zoo (tests/support/zoo.py): a K = 0 build of every supported family gives its source's
own vectors on every load path, K = 4 puts the [DUMP] tokens right after the leading special token, and the families the
package cannot reproduce are refused with a message that names the module or mode and what to do."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch
from sentence_transformers import SentenceTransformer
from transformers import AutoConfig, AutoModel, AutoTokenizer

from hf_dumpembed.model.backbone import is_decoder_backbone
from hf_dumpembed.model.builder import BuildOptions, build
from hf_dumpembed.model.folder_schema import folder_deviations
from tests.support.zoo import FAMILIES, REFUSED, SUPPORTED, TEXTS

TOLERANCE = 1e-5
K = 4

BuildResult = Path | BaseException


@pytest.fixture(scope="session")
def zoo_build(zoo_source: Callable[[str], Path], tmp_path_factory: pytest.TempPathFactory
              ) -> Callable[[str, int], Path]:
    """``zoo_build(name, k) -> Path``: the family's source built once per session with K = k (no [DUMP] matching);
    a failed build is remembered and re-raised, so each family's build runs at most once per K."""
    results: dict[tuple[str, int], BuildResult] = {}

    def get(name: str, k: int) -> Path:
        key = (name, k)
        if key not in results:
            out = tmp_path_factory.mktemp(f"zoo-build-{name}-k{k}") / "model"
            options = BuildOptions(num_dump_tokens=0) if k == 0 else BuildOptions(num_dump_tokens=k, match_steps=0)
            try:
                results[key] = build(zoo_source(name), out, options)
            except Exception as error:  # noqa: BLE001 - re-raised by every test that needs this build
                results[key] = error
        result = results[key]
        if isinstance(result, BaseException):
            raise result
        return result

    return get


def _source(folder: Path) -> SentenceTransformer:
    return SentenceTransformer(str(folder), device="cpu")


def _built(folder: Path) -> SentenceTransformer:
    return SentenceTransformer(str(folder), device="cpu", trust_remote_code=True)


def _assert_close(actual: np.ndarray, expected: np.ndarray, what: str) -> None:
    assert actual.shape == expected.shape, what
    diff = float(np.abs(actual - expected).max())
    assert diff <= TOLERANCE, f"{what}: max |Δ| = {diff:.2e}"


@pytest.mark.parametrize("name", SUPPORTED)
def test_k0_sentence_transformers_matches_source(name: str, zoo_source: Callable[[str], Path],
                                                 zoo_build: Callable[[str, int], Path]) -> None:
    """SentenceTransformer(out): encode, encode_query, encode_document and every named prompt equal the source's."""
    source, built = _source(zoo_source(name)), _built(zoo_build(name, 0))
    assert built.prompts == source.prompts
    assert built.default_prompt_name == source.default_prompt_name
    for method in ("encode", "encode_query", "encode_document"):
        _assert_close(getattr(built, method)(TEXTS), getattr(source, method)(TEXTS), method)
    for prompt_name in source.prompts:
        _assert_close(built.encode(TEXTS, prompt_name=prompt_name), source.encode(TEXTS, prompt_name=prompt_name),
                      f"prompt_name={prompt_name!r}")


@pytest.mark.parametrize("name", SUPPORTED)
def test_k0_automodel_matches_source(name: str, zoo_source: Callable[[str], Path],
                                     zoo_build: Callable[[str, int], Path]) -> None:
    """AutoModel + AutoTokenizer on the prompt-prepended texts give the source's vectors as sentence_embedding."""
    source = _source(zoo_source(name))
    out = zoo_build(name, 0)
    model = AutoModel.from_pretrained(out, trust_remote_code=True).eval()
    tokenizer = AutoTokenizer.from_pretrained(out)
    for prompt_name in [None, *source.prompts]:
        prompt = "" if prompt_name is None else source.prompts[prompt_name]
        batch = tokenizer([prompt + text for text in TEXTS], padding=True, truncation=True,
                          max_length=source.max_seq_length, return_tensors="pt")
        with torch.no_grad():
            vectors = model(**batch).sentence_embedding.numpy()
        _assert_close(vectors, source.encode(TEXTS, prompt_name=prompt_name), f"AutoModel, prompt {prompt_name!r}")


@pytest.mark.parametrize("name", SUPPORTED)
def test_k4_dump_tokens_follow_the_leading_special_token(name: str, zoo_source: Callable[[str], Path],
                                                         zoo_build: Callable[[str, int], Path]) -> None:
    """K = 4: the [DUMP] ids sit right after [CLS]/<s>/<bos> (first when the tokenizer adds none), and the rest of
    every (prompted) text is tokenized as the source tokenizes it; the folder encodes finite vectors."""
    family = FAMILIES[name]
    out = zoo_build(name, K)
    dump_ids = json.loads((out / "config.json").read_text())["dump_token_ids"]
    assert len(dump_ids) == K
    tokenizer, source_tokenizer = AutoTokenizer.from_pretrained(out), AutoTokenizer.from_pretrained(zoo_source(name))
    offset = 1 if family.leading_special else 0
    for text in [TEXTS[0], TEXTS[2], *(prompt + TEXTS[1] for prompt in family.prompts.values())]:
        ids, source_ids = tokenizer(text)["input_ids"], source_tokenizer(text)["input_ids"]
        assert ids[offset:offset + K] == dump_ids, (text, ids)
        assert ids[:offset] + ids[offset + K:] == source_ids, text
    vectors = _built(out).encode(TEXTS)
    assert vectors.shape == (len(TEXTS), family.dimension) and np.isfinite(vectors).all()
    assert folder_deviations(out) == []  # what build writes for every family is exactly the trusted shape


@pytest.mark.parametrize("name", REFUSED)
def test_unsupported_stack_is_refused(name: str, zoo_source: Callable[[str], Path], tmp_path: Path) -> None:
    """A stack the package cannot reproduce exactly: ValueError naming the module / mode and what to do; no output."""
    out = tmp_path / "model"
    with pytest.raises(ValueError) as caught:
        build(zoo_source(name), out, BuildOptions(num_dump_tokens=0))
    message = str(caught.value)
    missing = [word for word in FAMILIES[name].refusal_words if word not in message]
    assert not missing, f"{missing} not in: {message}"
    assert not out.exists()


@pytest.mark.parametrize("name", list(FAMILIES))
def test_decoder_detection(name: str, zoo_source: Callable[[str], Path]) -> None:
    """The package's decoder rule (default pooling, [DUMP] init and matching follow it) recognises each family:
    sentence-transformers re-saves a causal LM as its bare model class (LlamaModel, MistralModel, GPTNeoModel), as
    e5-mistral-7b-instruct ships, so the architectures suffix alone does not tell."""
    assert is_decoder_backbone(AutoConfig.from_pretrained(zoo_source(name))) is FAMILIES[name].decoder


@pytest.mark.parametrize("name", SUPPORTED)
def test_k0_mteb_and_stock_export_match_the_source(name: str, zoo_source: Callable[[str], Path],
                                                  zoo_build: Callable[[str, int], Path], tmp_path: Path) -> None:
    """mteb's stock wrapper (document prompt) and `export-st` (no remote code) give the source's vectors."""
    from hf_dumpembed.export.stock import export_stock_st
    from hf_dumpembed.export.verify import encode_with_mteb

    folder = zoo_build(name, 0)
    source = _source(zoo_source(name))
    expected = source.encode_document(TEXTS)
    _assert_close(encode_with_mteb(folder, TEXTS), expected, "mteb")
    stock = export_stock_st(folder, tmp_path / "stock")
    assert "modeling_dumpembed.py" not in {p.name for p in stock.iterdir()}
    assert folder_deviations(folder) == [] and folder_deviations(stock) == []  # both shapes, every family
    exported = SentenceTransformer(str(stock), device="cpu")
    _assert_close(exported.encode_document(TEXTS), expected, "stock export")
    _assert_close(exported.encode_query(TEXTS), source.encode_query(TEXTS), "stock export, query")


@pytest.mark.parametrize("name", SUPPORTED)
def test_k0_onnx_graph_matches_or_is_refused_clearly(name: str, zoo_build: Callable[[str, int], Path],
                                                     tmp_path: Path) -> None:
    """`export-onnx`: every graph within its tolerance of the torch model, or a refusal that names the reason."""
    from hf_dumpembed.export.onnx import export_onnx

    folder = zoo_build(name, 0)
    config = json.loads((folder / "config.json").read_text())
    if not config.get("include_prompt", True) and config.get("prompt_token_ids_excluded"):
        with pytest.raises(ValueError, match="include_prompt=False"):
            export_onnx(folder, tmp_path / "onnx")
        return
    result = export_onnx(folder, tmp_path / "onnx")
    assert result.parity and all(p.ok for p in result.parity), result.describe()


@pytest.mark.parametrize("name", SUPPORTED)
def test_fit_then_load_time_projection_dim(name: str, zoo_build: Callable[[str, int], Path], tmp_path: Path) -> None:
    """A PCA fit on a K = 4 folder serves any k <= its fitted dimension at load time (unit norm where the source
    normalises)."""
    from hf_dumpembed.projections import FitOptions, fit_projection

    folder = zoo_build(name, K)
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(TEXTS * 10 + [f"{text} number {i}" for i, text in enumerate(TEXTS * 6)]))
    fitted = fit_projection(folder, tmp_path / "pca", FitOptions(method="pca", dim=8, plots=False), corpus=corpus)
    model = SentenceTransformer(str(fitted), device="cpu", trust_remote_code=True, model_kwargs={"projection_dim": 4})
    vectors = model.encode(TEXTS)
    assert vectors.shape == (len(TEXTS), 4) and np.isfinite(vectors).all()
    if json.loads((folder / "config.json").read_text())["normalize"]:
        np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


@pytest.mark.parametrize("side", ["left", "right"])
@pytest.mark.parametrize("name", SUPPORTED)
def test_k4_vectors_do_not_depend_on_padding(name: str, side: str, zoo_build: Callable[[str, int], Path]) -> None:
    """A batch padded on either side gives each text's own vector (positions counted from its first real token,
    or left to backbones that derive them from the ids: RoBERTa, XLM-R, MPNet)."""
    folder = zoo_build(name, K)
    model = AutoModel.from_pretrained(str(folder), trust_remote_code=True).eval()
    tokenizer = AutoTokenizer.from_pretrained(str(folder), trust_remote_code=True)
    tokenizer.padding_side = side
    with torch.no_grad():
        batch = tokenizer(TEXTS, padding=True, truncation=True, return_tensors="pt")
        together = model(**batch).sentence_embedding.float().numpy()
        alone = np.concatenate([model(**tokenizer([t], truncation=True, return_tensors="pt")).sentence_embedding
                                .float().numpy() for t in TEXTS])
    _assert_close(together, alone, f"{side} padding")
