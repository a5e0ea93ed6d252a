"""The machine and library versions a run used (recorded with training runs, benchmarks and the quickstart)."""

from __future__ import annotations

import os
import platform
from importlib import metadata
from pathlib import Path
from typing import Any

import torch

LIBRARIES = ("torch", "transformers", "sentence-transformers", "mteb", "accelerate", "datasets", "tokenizers",
             "hf_dumpembed")


def library_versions(names: tuple[str, ...] = LIBRARIES) -> dict[str, str | None]:
    """Installed versions (None where a library is not installed)."""
    versions: dict[str, str | None] = {}
    for name in names:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo (Linux), else what `platform` knows."""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text(errors="replace").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def memory_gib() -> float | None:
    """Total memory in GiB (Linux), else None."""
    try:
        return round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    except (ValueError, OSError, AttributeError):
        return None


def machine_info() -> dict[str, Any]:
    """CPU, cores, memory, accelerator, Python, library versions and torch threads of this process."""
    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "memory_gib": memory_gib(),
        "device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu",
        "python": platform.python_version(),
        "platform": platform.platform(),
        "libraries": library_versions(),
        "torch_threads": torch.get_num_threads(),
    }


def describe_machine(info: dict[str, Any]) -> str:
    """One line for tables and reports: "AMD EPYC …, 2 cores, 24 GiB, cpu; torch 2.13.0, …"."""
    libraries = info.get("libraries", {})
    versions = ", ".join(f"{name} {libraries[name]}" for name in ("torch", "transformers", "sentence-transformers")
                         if libraries.get(name))
    memory = f", {info['memory_gib']:g} GiB" if info.get("memory_gib") else ""
    load = info.get("load_average")  # os.getloadavg() when the run recorded it (1, 5, 15 minutes)
    load = f"; load average {' / '.join(f'{v:.1f}' for v in load)}" if isinstance(load, list) and load else ""
    return (f"{info.get('cpu', '?')}, {info.get('cores', '?')} cores{memory}, {info.get('device', 'cpu')}; "
            f"{versions}; {info.get('torch_threads', '?')} torch threads{load}")
