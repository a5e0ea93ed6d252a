"""Dataset builders on small local fixtures (the Debian/gensim sources are exercised in a slow test)."""

from __future__ import annotations

import bz2
import gzip
import json
from pathlib import Path

import pytest

from hf_dumpembed.data.beir import load_beir
from hf_dumpembed.data.corpora.manifest import MANIFEST_FILE, write_manifest
from hf_dumpembed.data.corpora.manpages import manpages_pairs, parse_man_page, roff_to_text
from hf_dumpembed.data.corpora.pyfaq import faq_sections, pyfaq_pairs
from hf_dumpembed.data.corpora.stdlib_code import collect_functions, split_stdlib
from hf_dumpembed.data.corpora.wikilong import split_lead, wikilong_pairs, wikitext_to_text

ACCEPT = r""".\" Copyright comment
.TH accept 2 2022-12-04 "Linux man-pages 6.03"
.SH NAME
accept, accept4 \- accept a connection on a socket
.SH SYNOPSIS
.nf
.B #include <sys/socket.h>
.fi
.SH DESCRIPTION
The
.BR accept ()
system call is used with connection-based socket types
.RB ( SOCK_STREAM ,
.BR SOCK_SEQPACKET ).
It extracts the \fIfirst\fP connection request \- see
.BR listen (2).
.TS
tab;
l l.
table	cell
.TE
.SH RETURN VALUE
Zero.
"""


def _gz(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(text.encode()))


def test_roff_to_text_resolves_macros_escapes_and_drops_tables() -> None:
    summary, description = parse_man_page(ACCEPT)
    assert summary == "accept a connection on a socket"
    assert description == (
        "The accept() system call is used with connection-based socket types (SOCK_STREAM, SOCK_SEQPACKET). "
        "It extracts the first connection request - see listen(2)."
    )
    assert roff_to_text(['.BI "int " fd ");"']) == "int fd);"


def test_manpages_pairs_skip_links_and_duplicates(tmp_path: Path) -> None:
    root = tmp_path / "man"
    _gz(root / "man2" / "accept.2.gz", ACCEPT)
    _gz(root / "man3" / "dup.3.gz", ACCEPT.replace("accept, accept4", "dup"))  # same summary: dropped
    _gz(root / "man3" / "link.3.gz", ".so man2/accept.2\n")  # an include page: skipped
    (root / "man3" / "alias.3.gz").symlink_to(root / "man2" / "accept.2.gz")  # a symlink: skipped
    corpus, queries, qrels = manpages_pairs(root)
    assert list(corpus) == ["man2/accept.2"]
    assert queries == {"q:man2/accept.2": "accept a connection on a socket"}
    assert qrels == {"q:man2/accept.2": {"man2/accept.2": 1}}


FAQ = """\
==========
Some FAQ
==========

.. contents::

General
=======

What is the :mod:`sys` module for?
----------------------------------

It gives access to ``argv`` and the interpreter, see :pep:`8` and `the docs <https://docs.python.org>`_ here.

Why
---

Too short a question: dropped.
"""


def test_faq_sections_and_pairs(tmp_path: Path) -> None:
    sections = faq_sections(FAQ)
    assert [s[0] for s in sections] == ["What is the :mod:`sys` module for?", "Why"]  # "General" has no body
    assert sections[0][1] == "It gives access to argv and the interpreter, see PEP 8 and the docs here."
    faq = tmp_path / "usr/share/doc/python3.11/html/_sources/faq"
    faq.mkdir(parents=True)
    (faq / "general.rst.txt").write_text(FAQ)
    corpus, queries, qrels = pyfaq_pairs(tmp_path)
    assert list(queries.values()) == ["What is the :mod:`sys` module for?"]
    assert all(len(judged) == 1 and next(iter(judged)) in corpus for judged in qrels.values())


def _write_module(root: Path, name: str, functions: int, prefix: str) -> None:
    lines = []
    for i in range(functions):
        lines += [
            f"def {prefix}_{i}(x):",
            f'    """Compute the {prefix} number {i} of the input value.',
            "",
            "    More detail that is not part of the query.",
            '    """',
            f"    y = x + {i}",
            f"    z = y * {len(prefix)}",
            "    return z",
            "",
        ]
    path = root / f"{name}.py"
    path.write_text("\n".join(lines))


def test_stdlib_split_is_by_module_and_strips_docstrings(tmp_path: Path) -> None:
    for module in ["alpha", "beta", "gamma", "delta", "epsilon", "zeta"]:
        _write_module(tmp_path, module, 5, module)
    (tmp_path / "test").mkdir()
    _write_module(tmp_path / "test", "test_alpha", 3, "test")  # a test folder: never collected
    functions = collect_functions(tmp_path)
    assert len(functions) == 30
    first = next(f for f in functions if f.qualname == "alpha:alpha_0")
    assert first.summary == "Compute the alpha number 0 of the input value."
    assert first.code == "def alpha_0(x):\n    y = x + 0\n    z = y * 5\n    return z"
    splits = split_stdlib(functions, test_queries=4, test_documents=10, train_pairs=100, seed=0)
    test_corpus, test_queries, test_qrels = splits.test
    train_corpus, train_queries, _ = splits.train
    assert len(splits.test_modules) == 2 and len(test_corpus) == 10 and len(test_queries) == 4
    assert set(splits.test_modules).isdisjoint(splits.train_modules)
    assert {d.split(":")[0] for d in train_corpus}.isdisjoint(splits.test_modules)
    assert len(train_queries) == 20
    assert all(next(iter(j)) in test_corpus for j in test_qrels.values())
    assert split_stdlib(functions, test_queries=4, test_documents=10, seed=0) == splits  # deterministic


WIKI = """<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.10/">
<page><title>Redirected</title><ns>0</ns><id>1</id><redirect title="X" />
<revision><text>#REDIRECT [[X]]</text></revision></page>
<page><title>Talk:Thing</title><ns>1</ns><id>2</id><revision><text>talk page</text></revision></page>
<page><title>Thing</title><ns>0</ns><id>3</id><revision><text>{{Infobox|a={{nested}}}}
'''Thing''' is a [[concept|notion]] used in [[philosophy]].&lt;ref&gt;cite&lt;/ref&gt; It has a second sentence.

==History==
BODY
[[Category:Things]]</text></revision></page>
</mediawiki>"""


def test_wikitext_and_wikilong_pairs(tmp_path: Path) -> None:
    text = wikitext_to_text("{{a|{{b}}}}'''X''' is a [[y|z]].<ref>r</ref> [[File:f.png|thumb|c [[l]]]]\n\n==H==\nMore.")
    assert text == "X is a z.\n\nH. More."
    assert split_lead("A is B. It is C.\n\nD.") == ("A is B.", "It is C.\n\nD.")
    dump = tmp_path / "wiki.xml.bz2"
    dump.write_bytes(bz2.compress(WIKI.replace("BODY", "history text " * 200).encode()))
    corpus, queries, qrels = wikilong_pairs(dump)
    assert queries == {"q:enwiki-3": "Thing is a notion used in philosophy."}
    assert corpus["enwiki-3"]["text"].startswith("It has a second sentence.\n\nHistory.")
    assert "Category" not in corpus["enwiki-3"]["text"]


def test_manifest_records_counts_and_checksums(tmp_path: Path) -> None:
    from hf_dumpembed.data.beir import write_beir

    folder = write_beir(tmp_path / "Set", {"d": {"text": "doc"}}, {"q": "query"}, {"q": {"d": 1}})
    summary = write_manifest("Set", folder, "test", {"documents": 1, "queries": 1, "judgements": 1}, {"x": 1})
    manifest = json.loads((folder / MANIFEST_FILE).read_text())
    assert manifest["sha256"] == summary.sha256 and set(manifest["files"]) == {
        "corpus.jsonl", "queries.jsonl", "qrels/test.tsv"
    }
    (folder / "corpus.jsonl").write_text('{"_id": "d", "text": "changed"}\n')
    again = write_manifest("Set", folder, "test", {"documents": 1, "queries": 1, "judgements": 1}, {"x": 1})
    assert again.sha256 != summary.sha256


@pytest.mark.slow
def test_build_all_real_sources(tmp_path: Path) -> None:
    """Needs apt-get (Debian), PyPI access for the gensim wheel and the CPython stdlib; ~30 s."""
    from hf_dumpembed.data.corpora import build_datasets

    summaries = {s.name: s for s in build_datasets(tmp_path)}
    assert set(summaries) == {"ManPages", "PyFAQ", "StdlibCode", "StdlibCodeTrain", "WikiLong"}
    for summary in summaries.values():
        data = load_beir(summary.folder, summary.split)
        assert len(data.queries) == summary.num_queries > 50
    assert summaries["StdlibCode"].num_queries == 500
    assert summaries["StdlibCodeTrain"].num_queries > 1000
    again = build_datasets(tmp_path / "again", ["PyFAQ"])
    assert again[0].sha256 == summaries["PyFAQ"].sha256


# --- the collection catalog: one list of names, every other list derived from it ---

ROOT = Path(__file__).resolve().parents[2]


def test_catalog_names_each_collection_once_with_its_split_and_builder() -> None:
    from hf_dumpembed.data.corpora import BUILDERS, COLLECTIONS, EVAL_COLLECTIONS, HELD_OUT, TRAIN_COLLECTION

    names = [c.name for c in COLLECTIONS]
    assert len(names) == len(set(names)) and {c.split for c in COLLECTIONS} == {"test", "train"}
    assert tuple(BUILDERS) == tuple(dict.fromkeys(c.builder for c in COLLECTIONS))
    assert HELD_OUT == ("ManPages", "PyFAQ", "StdlibCode", "WikiLong") and TRAIN_COLLECTION == "StdlibCodeTrain"
    assert EVAL_COLLECTIONS == ("ManPages", "PyFAQ", "StdlibCode")


def test_every_list_of_collections_in_the_package_comes_from_the_catalog() -> None:
    from hf_dumpembed.commands.evaluate import EVAL_DESCRIPTION
    from hf_dumpembed.commands.quickstart import DESCRIPTION
    from hf_dumpembed.data.corpora import EVAL_COLLECTIONS, HELD_OUT, TRAIN_COLLECTION
    from hf_dumpembed.evaluation.presets import GROUPS, LOCAL_TASKS
    from hf_dumpembed.quickstart.data import BUILDER_OF, REQUIRED
    from hf_dumpembed.quickstart.options import QuickstartOptions

    assert LOCAL_TASKS == HELD_OUT == GROUPS["local"]
    assert EVAL_COLLECTIONS == QuickstartOptions().eval_tasks
    assert set(BUILDER_OF) == {*EVAL_COLLECTIONS, TRAIN_COLLECTION} and REQUIRED == ("StdlibCode", TRAIN_COLLECTION)
    assert " | ".join(HELD_OUT) in EVAL_DESCRIPTION and f"({TRAIN_COLLECTION} for training;" in DESCRIPTION


def _string_constants(path: Path) -> list[tuple[int, str]]:
    """(line, value) of every string literal in ``path`` that is not a docstring (f-string pieces included)."""
    import ast

    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings]


def test_no_hand_typed_collection_name_outside_the_catalog() -> None:
    """A collection named as a bare string ("PyFAQ", "data/PyFAQ") in the package or a bench script is a list the
    catalog does not feed; only the catalog and the registry (which pairs each builder with its function) name them."""
    from hf_dumpembed.data.corpora import COLLECTION_NAMES

    allowed = {ROOT / "hf_dumpembed/data/corpora/catalog.py", ROOT / "hf_dumpembed/data/corpora/registry.py"}
    files = [*(ROOT / "hf_dumpembed").rglob("*.py"), *(ROOT / "scripts").rglob("*.py")]
    found = [f"{path.relative_to(ROOT)}:{line}: {value!r}" for path in sorted(set(files) - allowed)
             for line, value in _string_constants(path) if value.removeprefix("data/") in COLLECTION_NAMES]
    assert not found, "collection names typed by hand (derive them from hf_dumpembed.data.corpora):\n" + "\n".join(
        found)


def test_the_manifest_records_the_catalogs_split_use_query_and_document(tmp_path: Path) -> None:
    from hf_dumpembed.data.corpora import COLLECTION
    from hf_dumpembed.data.corpora.registry import _write

    triple = ({"d": {"title": "", "text": "doc"}}, {"q": "query"}, {"q": {"d": 1}})
    summary = _write(COLLECTION["StdlibCodeTrain"], tmp_path, triple, {"seed": 0})
    manifest = json.loads((tmp_path / "StdlibCodeTrain" / MANIFEST_FILE).read_text())
    assert summary.split == manifest["split"] == "train" and (tmp_path / "StdlibCodeTrain/qrels/train.tsv").is_file()
    assert manifest["source"] == {"seed": 0, "use": "training and projection fitting only",
                                  "query": "docstring first paragraph",
                                  "document": "function source without its docstring"}
