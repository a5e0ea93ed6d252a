"""Closed sets and Python names that README.md and docs/*.md spell out by hand are the package's own.

- every ``--flag a|b|c`` list is exactly that flag's choices in the parser (build, fit, export-onnx, ...);
- the pooling modes: docs/architecture.md's pipeline lists ``POOLING_MODES`` in order, docs/models.md and
  docs/clients.md the sentence-transformers modes they map to; the [DUMP] inits (docs/models.md), SpecTemp's modes
  (README), the projection methods (docs/projections.md), the YAML ``precision`` values (docs/training.md) and the
  quantized precisions (docs/serving.md) are their definitions' sets;
- the prompt templates docs/projections.md and docs/serving.md quote are ``PROMPT_TEMPLATES``' own text;
- every ``hf_dumpembed.x.y`` a doc names in backticks resolves, every import of a ```python block names something
  that exists, and docs/projections.md names exactly ``hf_dumpembed.projections.__all__``;
- docs/testing.md names exactly the fixtures ``tests/conftest.py`` defines.

docs/cli.md is generated from the parser and checked by tests/repository/test_cli_reference.py.
Run alone: ``python -m pytest tests/repository/test_docs_vocabularies.py`` (reads the markdown files).
"""

from __future__ import annotations

import ast
import importlib
import re
import typing
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
PAGES = [README, *sorted(path for path in DOCS.glob("*.md") if path.name != "cli.md")]
CHOICE_LIST = re.compile(r"(?<![\w-])(--[a-z][\w-]*)[ =]((?:[\w.+-]+\|)+[\w.+-]+)")


def read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def flat(text: str) -> str:
    """``text`` with every run of whitespace as one space (prose wraps anywhere)."""
    return " ".join(text.split())


def parser_choices() -> dict[str, list[tuple[str, ...]]]:
    """``--flag`` -> the choices it has in each subcommand that takes it with choices."""
    from hf_dumpembed.cli import build_parser

    found: dict[str, list[tuple[str, ...]]] = {}
    for sub in build_parser()._subparsers._group_actions[0].choices.values():
        for action in sub._actions:
            if action.choices is not None:
                for option in action.option_strings:
                    found.setdefault(option, []).append(tuple(str(choice) for choice in action.choices))
    return found


def test_every_choice_list_a_doc_shows_is_the_parsers() -> None:
    choices = parser_choices()
    wrong, seen = [], 0
    for page in PAGES:
        for flag, listed in CHOICE_LIST.findall(read(page)):
            seen += 1
            names = set(listed.split("|"))
            if flag not in choices:
                wrong.append(f"{page.name}: {flag} {listed}: the parser's {flag} takes no fixed choices")
            elif not any(names == set(option) for option in choices[flag]):
                wrong.append(f"{page.name}: {flag} {listed}: the parser's choices are "
                             + " or ".join("|".join(option) for option in choices[flag]))
    assert seen >= 5, "no `--flag a|b` lists found: the pattern is out of date"
    assert not wrong, "\n".join(wrong)


def _only(pattern: str, page: Path) -> re.Match:
    match = re.search(pattern, flat(read(page)))
    assert match, f"{page.name} no longer matches {pattern!r}: update this test with the page"
    return match


def _ticked(text: str) -> list[str]:
    return re.findall(r"`([\w-]+)`", text)


def test_the_pooling_modes_the_docs_list_are_the_remote_configs() -> None:
    from hf_dumpembed.remote.configuration_dumpembed import POOLING_MODES, ST_POOLING_MODES

    pipeline = _only(r"→ pooling: ((?:\w+ \| )+\w+)", DOCS / "architecture.md").group(1)
    assert pipeline.split(" | ") == list(POOLING_MODES), f"docs/architecture.md pipeline: {pipeline} vs {POOLING_MODES}"
    stock_modes = {mode for mode in ST_POOLING_MODES.values() if mode}
    carried = _only(r"`pooling_mode`; ((?:`\w+`,? ?)+)\)", DOCS / "models.md").group(1)
    assert set(_ticked(carried)) == stock_modes, "docs/models.md: the sentence-transformers modes build carries over"
    exported = _only(r"the pooling, one of sentence-transformers' modes ((?:`\w+`,? ?)+)\)", DOCS / "clients.md")
    assert set(_ticked(exported.group(1))) == stock_modes, "docs/clients.md: the stock export's pooling modes"


def test_the_dump_inits_docs_models_md_lists_are_the_builders() -> None:
    from hf_dumpembed.model.embeddings import DumpInit

    paragraph = _only(r"\*\*The \[DUMP\] rows\.\*\*(.*?)\*\*", DOCS / "models.md").group(1)
    named = set(re.findall(r"`(?:--init )?(\w+)", paragraph))
    assert {init.value for init in DumpInit} <= named, f"docs/models.md's [DUMP] rows paragraph names {named}"


def test_the_projection_methods_and_spectemp_modes_the_docs_list_are_the_vocabularys() -> None:
    from hf_dumpembed.model.projection_record import METHOD_NAMES, METHODS

    text = read(DOCS / "projections.md")
    table = re.search(r"^\| method \|.*?\n\n", text, flags=re.MULTILINE | re.DOTALL).group(0)
    rows = [line.split("|")[1] for line in table.splitlines()[2:] if line.strip()]
    tabled = {name for row in rows for name in re.findall(r"`([\w-]+)", row)}
    assert tabled == set(METHOD_NAMES), f"docs/projections.md method table: {sorted(tabled)} vs {METHOD_NAMES}"
    baselines = _only(r"# baselines: ([^#]*?) hf-dumpembed", DOCS / "projections.md").group(1)
    listed = {part.split()[0] for part in baselines.split(" | ")}
    assert listed == set(METHOD_NAMES) - {"spectemp", "embedfilter"}, f"docs/projections.md baselines: {listed}"
    modes = _only(r"SpecTemp \(((?:\w+, )+\w+)\)", README).group(1)
    assert set(modes.split(", ")) == set(METHODS["spectemp"].mode_names), "README: SpecTemp's modes"


def test_the_training_precisions_and_quantized_precisions_are_their_definitions() -> None:
    from hf_dumpembed.model.quantization import PRECISIONS
    from hf_dumpembed.training.config import HyperParameters

    allowed = typing.get_args(typing.get_type_hints(HyperParameters)["precision"])
    listed = _only(r"`precision: ((?:\w+\|)+\w+)`", DOCS / "training.md").group(1)
    assert set(listed.split("|")) == set(allowed), f"docs/training.md precision: {listed} vs {allowed}"
    line = _only(r'precision="(\w+)"\) +# also ((?:\w+, )+\w+)', DOCS / "serving.md")
    quantized = {line.group(1), *line.group(2).split(", ")}
    assert quantized == set(PRECISIONS) - {"float32"}, f"docs/serving.md quantize precisions: {quantized}"


def test_the_prompt_templates_the_docs_quote_are_the_codes() -> None:
    """docs/projections.md quotes each template whole; docs/serving.md quotes PromptEOL's fixed opening (the text
    before ``{text}``, which the prefix cache computes once)."""
    from hf_dumpembed.model.prompting import PROMPT_TEMPLATES, PromptMode

    projections = flat(read(DOCS / "projections.md"))
    for mode, template in PROMPT_TEMPLATES.items():
        assert f"`--prompt {mode.value}` (`{template}`" in projections, f"docs/projections.md: {mode.value}"
    assert {mode.value for mode in PromptMode} == {mode.value for mode in PROMPT_TEMPLATES}
    opening = _only(r"PromptEOL's `([^`]*)`", DOCS / "serving.md").group(1)
    expected = PROMPT_TEMPLATES[PromptMode.PROMPTEOL].split("{text}")[0].rstrip()
    assert opening == expected, f"docs/serving.md quotes PromptEOL's opening as {opening!r}; the code's is {expected!r}"


def _resolves(dotted: str) -> bool:
    """``a.b.c`` is an importable module, or an attribute path below the longest importable prefix."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            target = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for name in parts[cut:]:
                target = getattr(target, name)
        except AttributeError:
            return False
        return True
    return False


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_package_name_a_doc_names_exists(page: Path) -> None:
    """Dotted ``hf_dumpembed....`` names in backticks (prose or code) and every ``from hf_dumpembed... import`` /
    ``import hf_dumpembed...`` of a ```python block, read with ``ast`` (parenthesised and aliased imports too)."""
    text = read(page)
    wrong = [name for name in sorted(set(re.findall(r"`(hf_dumpembed(?:\.\w+)+)", text))) if not _resolves(name)]
    for block in re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL):
        for node in ast.walk(ast.parse(block)):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("hf_dumpembed"):
                wrong += [f"{node.module}.{a.name}" for a in node.names if not _resolves(f"{node.module}.{a.name}")]
            elif isinstance(node, ast.Import):
                wrong += [a.name for a in node.names if a.name.startswith("hf_dumpembed") and not _resolves(a.name)]
    assert not wrong, f"{page.name} names what the package does not have: {wrong}"


def test_docs_projections_md_names_exactly_what_hf_dumpembed_projections_exports() -> None:
    projections = importlib.import_module("hf_dumpembed.projections")
    sentence = _only(r"`hf_dumpembed\.projections` exports (.*?); the maths", DOCS / "projections.md").group(1)
    assert set(_ticked(sentence)) == set(projections.__all__), f"docs/projections.md vs {projections.__all__}"


def test_docs_testing_md_names_exactly_the_shared_fixtures() -> None:
    tree = ast.parse(read(ROOT / "tests" / "conftest.py"))
    defined = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)
               and any("fixture" in ast.unparse(decorator) for decorator in node.decorator_list)}
    paragraph = _only(r"\*\*Where a fixture goes\.\*\*(.*?)A fixture only one file uses", DOCS / "testing.md")
    assert set(_ticked(paragraph.group(1))) == defined, "docs/testing.md: the fixtures of tests/conftest.py"
