"""Mutation testing of the core modules with mutmut 3 (not part of the default test run).

    python scripts/mutation.py run [GROUP ...]     # mutate and test, group by group (all groups when none given)
    python scripts/mutation.py run --survivors     # test again only the last run's survivors (after new tests)
    python scripts/mutation.py score [--json OUT]  # per-group mutation score from the last runs
    python scripts/mutation.py survivors [GROUP]   # the surviving mutants, with their diffs
    python scripts/mutation.py record [--reading MD]  # write scripts/bench/results/mutation.json (BENCHMARKS.md)

The files mutmut may mutate and the fast tests it runs are set in pyproject.toml ``[tool.mutmut]``; a group
selects mutants by name, so a module's unrelated functions (e.g. the rest of the trainer) are never run. Each
group runs under ``nice -n 15`` with one worker and one BLAS/OpenMP thread. Results live in ``mutants/`` (ignored).
Score = (killed + timeout) / all mutants of the group; "no tests" (no selected test reaches the function) counts as
survived. See tests/MUTATION.md for the last scores and why each remaining survivor is equivalent.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
M = "hf_dumpembed"
# Group -> mutant-name patterns (mutmut names mutants <module>.x_<function>__mutmut_N, methods xǁClassǁmethod).
GROUPS: dict[str, list[str]] = {
    "remote.configuration": [f"{M}.remote.configuration_dumpembed.*"],
    "remote.modeling": [f"{M}.remote.modeling_dumpembed.*"],
    "projections.maths.statistics": [f"{M}.projections.maths.statistics.*"],
    "projections.maths.spectrum": [f"{M}.projections.maths.spectrum.*"],
    "projections.maths.gamma_curve": [f"{M}.projections.maths.gamma_curve.*"],
    "projections.maths.band_basis": [f"{M}.projections.maths.band_basis.*"],
    "projections.maths.reference_maps": [f"{M}.projections.maths.reference_maps.*"],
    "model.tokenizer": [f"{M}.model.tokenizer.*"],
    "training.resume": [f"{M}.training.trainer.x_last_complete_checkpoint__*",
                        f"{M}.training.trainer.x_check_resumable__*",
                        f"{M}.training.provenance.x_check_data_unchanged__*"],
}
DETECTED = {1, 3, 36, -24, 24, 152, 255}  # killed (test failure / pytest error) or timeout
SKIPPED = {34}


def _env() -> dict[str, str]:
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    env.pop("PYTHONPATH", None)  # mutmut puts mutants/ first; the tests must import the mutated copy
    return env


def _mutmut_run(names: list[str]) -> None:
    command = ["nice", "-n", "15", sys.executable, "-m", "mutmut", "run", "--max-children", "1", *names]
    subprocess.run(command, cwd=ROOT, env=_env(), check=False)


def run(groups: list[str], survivors: bool = False) -> None:
    for group in groups:
        sys.stdout.write(f"== {group}\n")
        sys.stdout.flush()
        names = score().get(group, {}).get("survivors", []) if survivors else GROUPS[group]
        if names:
            _mutmut_run(names)


def exit_codes() -> dict[str, int | None]:
    codes: dict[str, int | None] = {}
    for meta in (ROOT / "mutants").rglob("*.py.meta"):
        codes.update(json.loads(meta.read_text())["exit_code_by_key"])
    return codes


def group_of(name: str) -> str | None:
    return next((g for g, patterns in GROUPS.items() if any(fnmatch.fnmatch(name, p) for p in patterns)), None)


def score() -> dict[str, dict[str, object]]:
    """Per group: mutant counts, the score and the survivors' names (only groups whose mutants all ran)."""
    table: dict[str, dict[str, object]] = {}
    for name, code in sorted(exit_codes().items()):
        group = group_of(name)
        if group is None or code in SKIPPED:
            continue
        row = table.setdefault(group, {"mutants": 0, "killed": 0, "survived": 0, "not_checked": 0, "survivors": []})
        row["mutants"] += 1
        if code is None:
            row["not_checked"] += 1
        elif code in DETECTED:
            row["killed"] += 1
        else:
            row["survived"] += 1
            row["survivors"].append(name)
    for row in table.values():
        checked = row["mutants"] - row["not_checked"]
        row["score"] = round(row["killed"] / checked, 4) if checked else None
    return {group: table[group] for group in GROUPS if group in table}


SETUP = (
    "mutmut 3.8 (`[tool.mutmut]` in pyproject.toml), fork isolation, one worker under `nice -n 15`, one BLAS "
    "thread. Mutated: the remote code (configuration, modeling: pooling, [DUMP] prefix check, prompt "
    "composition, projection recomposition, load-time checks), the projection formulas and statistics "
    "(projections/maths/: statistics, spectrum, gamma_curve, band_basis, reference_maps), the tokenizer's [DUMP] "
    "prefix and training's resume decisions (`last_complete_checkpoint`, `check_resumable`, "
    "`check_data_unchanged`). Tests run per mutant: the tests of those modules that reach the mutated function "
    "(the files `[tool.mutmut]` lists: tests/remote/test_modeling_dumpembed.py, tests/model/test_tokenizer.py, "
    "tests/training/test_trainer.py, "
    "tests/projections/test_maths_{statistics,spectrum,gamma_curve,band_basis,reference_maps}.py). Lines that only "
    "word an error/warning/log message are not mutated. Score = (killed + timeout) / checked mutants; 'no tests' "
    "counts as a survivor. Survivors and why they are equivalent: tests/MUTATION.md."
)


def record(reading: str | None) -> None:
    sys.path[:0] = [str(ROOT), str(ROOT / "scripts" / "bench")]
    from benchmarks import Table, this_machine, write_record

    rows = [[group, row["mutants"], row["mutants"] - row["not_checked"], row["killed"], row["survived"],
             row["score"]] for group, row in score().items()]
    table = Table(columns=["module", "mutants", "checked", "killed", "survived", "score"], rows=rows,
                  formats={"score": ".1%"})
    write_record("mutation", tables=[table], commands=["pip install 'mutmut>=3.8,<4'",
                                                       "python scripts/mutation.py run",
                                                       "python scripts/mutation.py run --survivors",
                                                       "python scripts/mutation.py score"],
                 machine=this_machine(), title="Mutation testing of the core modules", setup=SETUP,
                 reading=reading, order=95, directory=ROOT / "scripts" / "bench" / "results")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    run_parser = sub.add_parser("run")
    run_parser.add_argument("groups", nargs="*", help=f"any of {', '.join(GROUPS)}")
    run_parser.add_argument("--survivors", action="store_true", help="rerun only the surviving mutants")
    score_parser = sub.add_parser("score")
    score_parser.add_argument("--json", type=Path)
    record_parser = sub.add_parser("record")
    record_parser.add_argument("--reading", help="the reading (markdown); kept from the existing record when omitted")
    survivors_parser = sub.add_parser("survivors")
    survivors_parser.add_argument("groups", nargs="*")
    args = parser.parse_args()
    unknown = sorted(set(getattr(args, "groups", None) or []) - set(GROUPS))
    if unknown:
        parser.error(f"unknown group(s) {unknown}; choose from {list(GROUPS)}")
    if args.command == "run":
        run(args.groups or list(GROUPS), args.survivors)
    elif args.command == "score":
        table = score()
        for group, row in table.items():
            sys.stdout.write(f"{group:26s} {row['killed']:4d}/{row['mutants'] - row['not_checked']:<4d} killed  "
                             f"score {row['score']}  survivors {row['survived']}  not checked {row['not_checked']}\n")
        if args.json:
            args.json.write_text(json.dumps(table, indent=2) + "\n")
    elif args.command == "record":
        record(args.reading)
    else:
        for group, row in score().items():
            if args.groups and group not in args.groups:
                continue
            for name in row["survivors"]:
                subprocess.run([sys.executable, "-m", "mutmut", "show", name], cwd=ROOT, env=_env(), check=False)


if __name__ == "__main__":
    main()
