"""tests/README.md's claim -> test table: every test it names exists, every page it names exists, and each row sits
under the module its first test tests."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TABLE = ROOT / "tests" / "README.md"
REFERENCE = re.compile(r"`(tests/[\w/]+\.py)::(\w+)`")


def table_references() -> list[tuple[str, str]]:
    """(file, function) of every `tests/x.py::test_name` in the claim -> test table."""
    return REFERENCE.findall(TABLE.read_text())


def test_every_test_the_claim_table_names_exists():
    """Each `tests/file.py::function` in tests/README.md is a test function defined at the top level of that file
    (read with `ast`, as pytest collects it), and every claim row names at least one."""
    text = TABLE.read_text()
    rows = [line for line in text.splitlines()  # claim rows: not the header, the rule or a **section** row
            if line.startswith("| ") and not line.startswith(("| claim", "| **"))]
    assert len(rows) >= 60, "the table lists the README's claims"
    unnamed = [row for row in rows if not REFERENCE.search(row)]
    assert not unnamed, f"claims without a named test: {unnamed}"
    missing = []
    defined: dict[str, set[str]] = {}
    for file, function in table_references():
        if file not in defined:
            path = ROOT / file
            tree = ast.parse(path.read_text()) if path.is_file() else ast.Module(body=[], type_ignores=[])
            defined[file] = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
        if not function.startswith("test_") or function not in defined[file]:
            missing.append(f"{file}::{function}")
    assert not missing, f"tests/README.md names tests that do not exist: {missing}"


PAGE = re.compile(r"(?:README\.md|RELIABILITY\.md|docs/[\w-]+\.md)")


def claim_rows() -> list[list[str]]:
    """The claim rows of the table, each as its cells (claim, where, tests)."""
    rows = []
    for line in TABLE.read_text().splitlines():
        if line.startswith("| ") and not line.startswith(("| claim", "| **")):
            rows.append([cell.strip() for cell in re.split(r"(?<!\\) \| ", line.strip("| "))])
    return rows


def test_every_claim_names_the_pages_that_make_it():
    """The "where (page)" column names, for each claim, README.md, RELIABILITY.md or a page of docs/ that exists, so
    a reader finds the claim's text."""
    header = next(line for line in TABLE.read_text().splitlines() if line.startswith("| claim"))
    assert header == "| claim | where (page) | test |"
    bad = []
    for cells in claim_rows():
        assert len(cells) == 3, f"a claim row without its three cells: {cells}"
        pages = [page.strip() for page in cells[1].split(",")]
        if not pages or any(not PAGE.fullmatch(page) or not (ROOT / page).is_file() for page in pages):
            bad.append(f"{cells[0][:60]}: {cells[1]!r}")
    assert not bad, f"claims whose page is missing or does not exist: {bad}"
    named = {page.strip() for cells in claim_rows() for page in cells[1].split(",")}
    pages = {"README.md", *(f"docs/{path.name}" for path in (ROOT / "docs").glob("*.md"))}
    assert len(named & pages) >= 8, "the table names few of the pages: the where column is out of date"


def test_the_claim_table_is_keyed_by_module():
    """Every row sits under the module its first test tests (tests/<layer>/test_<module>[_aspect].py), and every
    heading names a module or test folder that exists."""
    heading, wrong = None, []
    for line in TABLE.read_text().splitlines():
        if match := re.match(r"^\| \*\*`([\w/.]+)`\*\*", line):
            heading = match.group(1)
            if not (ROOT / heading).exists():
                wrong.append(f"heading {heading} does not exist")
        elif heading and (first := re.search(r"`tests/(\w+)/test_(\w+)\.py::", line)):
            layer, stem = first.groups()
            if heading.startswith("tests/"):
                ok = heading == f"tests/{layer}/"
            else:
                module = heading.removeprefix("hf_dumpembed/").removesuffix("/").removesuffix(".py")
                ok = module == layer or (module.startswith(layer + "/") and (
                    stem == module.split("/")[1] or stem.startswith(module.split("/")[1] + "_")))
            if not ok:
                wrong.append(f"{line[:80]}... sits under {heading}")
    assert not wrong, "claim rows under the wrong module:\n" + "\n".join(wrong)
