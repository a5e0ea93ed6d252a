"""Resumable steps: each step's outputs and timing are recorded when it finishes; a re-run skips finished steps."""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._utils.console import say

STATE_FILE = "quickstart-state.json"


@dataclass(frozen=True)
class StepRecord:
    """One step of the run: how long it took (when it ran), and whether this run skipped it."""

    name: str
    title: str
    seconds: float
    skipped: bool


class StepRunner:
    """Runs numbered steps under ``out``; ``out/quickstart-state.json`` remembers the finished ones.

    The state also holds the run's settings: resuming a folder made with other settings is refused (their outputs
    would not match), so nothing is mixed or silently overwritten.
    """

    def __init__(self, out: Path, settings: dict[str, Any], total: int, overwrite: bool = False) -> None:
        self.out = Path(out)
        self.state_path = self.out / STATE_FILE
        self.total = total
        self.number = 0
        self.records: list[StepRecord] = []
        state = self._read()
        if overwrite or not state:
            state = {"settings": settings, "done": {}}
        elif state.get("settings") != settings:
            differing = sorted(k for k in set(settings) | set(state.get("settings", {}))
                               if settings.get(k) != state.get("settings", {}).get(k))
            raise ValueError(f"{self.out} holds a quickstart run with other settings ({', '.join(differing)}); "
                             "pass --overwrite to redo it there, or choose another --output-dir.")
        self.state = state
        self.overwrite = overwrite
        self.out.mkdir(parents=True, exist_ok=True)
        self._write()

    def _read(self) -> dict[str, Any]:
        if not self.state_path.exists():
            return {}
        try:
            return json.loads(self.state_path.read_text())
        except ValueError as error:
            raise ValueError(f"{self.state_path} is not valid JSON ({error}); delete it (finished steps will run "
                             "again) or pass --overwrite.") from None

    def _write(self) -> None:
        partial = self.state_path.with_suffix(".partial")
        partial.write_text(json.dumps(self.state, indent=2) + "\n")
        partial.replace(self.state_path)

    def run(self, name: str, title: str, outputs: list[Path], make: Callable[[], Any]) -> StepRecord:
        """Run ``make`` unless step ``name`` finished before and its ``outputs`` still exist."""
        self.number += 1
        prefix = f"[{self.number}/{self.total}] {title}"
        if not self.overwrite and name in self.state["done"] and all(Path(p).exists() for p in outputs):
            say(f"{prefix}: done before, skipped")
            record = StepRecord(name, title, float(self.state["done"][name]["seconds"]), True)
        else:
            say(prefix)
            started = time.perf_counter()
            make()
            seconds = time.perf_counter() - started
            self.state["done"][name] = {"seconds": round(seconds, 2), "outputs": [str(p) for p in outputs]}
            self._write()
            say(f"        done in {seconds:.1f} s")
            record = StepRecord(name, title, seconds, False)
        self.records.append(record)
        return record


def fresh_output(path: Path, overwrite: bool) -> None:
    """Remove ``path`` before a step rewrites it (only when redoing with --overwrite)."""
    if overwrite and path.exists():
        shutil.rmtree(path) if path.is_dir() else path.unlink()
