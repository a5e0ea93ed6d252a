"""The README's two commands, CI and scripts/setup.sh's refusals (no install is run here: each case stops early)."""

from __future__ import annotations

import importlib.metadata as md
import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
STOCK_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"
SETUP_FILES = ("scripts/setup.sh", "scripts/_env.sh", "scripts/setup_check.py", "scripts/in-env", "pyproject.toml")


def _readme_commands() -> list[str]:
    """The command lines of the README's first fenced block, as written."""
    lines = (REPO / "README.md").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("```"))
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("```"))
    return [line for line in lines[start + 1 : end] if line.strip()]


def test_readme_starts_with_the_two_setup_commands():
    cmds = _readme_commands()
    assert len(cmds) == 2, cmds
    assert all(c.startswith("bash scripts/setup.sh && ") for c in cmds)
    assert "hf-dumpembed quickstart" in cmds[0]
    assert "HF_HUB_OFFLINE=1 " in cmds[1] and "python -m pytest" in cmds[1]


def test_ci_runs_the_readme_test_command_in_a_stock_environment():
    out = subprocess.run(
        ["bash", str(REPO / ".ci/run"), "--print-commands"], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    readme = [line.removeprefix("readme: ") for line in out if line.startswith("readme: ")]
    ci = [line.removeprefix("ci: ") for line in out if line.startswith("ci: ")]
    assert readme == _readme_commands()
    stock = f"env -i HOME={os.environ['HOME']} PATH={STOCK_PATH}"
    assert ci == [f"{stock} bash scripts/setup.sh", f"{stock} bash -c {_readme_commands()[1]}"]


def _copy_scripts(dest: Path) -> Path:
    """A checkout holding only the set-up files (no .venv), so that setup.sh takes its fresh-machine path."""
    for name in SETUP_FILES:
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, dest / name)
    return dest


def _run_stock(repo: Path, fake_bin: Path, *cmd: str) -> subprocess.CompletedProcess:
    env = {"HOME": os.environ.get("HOME", "/tmp"), "PATH": f"{fake_bin}:{STOCK_PATH}"}
    return subprocess.run(list(cmd), cwd=repo, env=env, capture_output=True, text=True, timeout=60)


def _write_exe(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)


def _base_interpreter() -> str:
    """An interpreter outside any virtual or conda environment (this one's, through the venv's symlink)."""
    exe = os.path.realpath(sys.executable)
    probe = (
        "import os, sys; print(sys.prefix != sys.base_prefix or os.path.isdir(os.path.join(sys.prefix, 'conda-meta')))"
    )
    if subprocess.run([exe, "-c", probe], capture_output=True, text=True).stdout.strip() != "False":
        pytest.skip(f"{exe} is itself inside an environment")
    return exe


def test_setup_refuses_a_python_older_than_3_10(tmp_path):
    repo = _copy_scripts(tmp_path / "repo")
    _write_exe(tmp_path / "bin/python3", "#!/bin/sh\necho 3.9.18\n")  # answers every version probe with 3.9.18
    res = _run_stock(repo, tmp_path / "bin", "bash", "scripts/setup.sh")
    assert res.returncode != 0
    assert "Python 3.9.18" in res.stderr and "needs Python >= 3.10" in res.stderr
    assert "PYTHON=/path/to/python3" in res.stderr
    assert not (repo / ".venv").exists()


def test_setup_names_the_venv_package_when_ensurepip_is_missing(tmp_path):
    base = _base_interpreter()
    repo = _copy_scripts(tmp_path / "repo")
    # What Debian/Ubuntu's python3 looks like without pythonX.Y-venv: `import ensurepip` fails.
    shadow = tmp_path / "no_ensurepip"
    shadow.mkdir()
    (shadow / "ensurepip.py").write_text("raise ModuleNotFoundError(\"No module named 'ensurepip'\")\n")
    _write_exe(tmp_path / "bin/python3", f'#!/bin/sh\nPYTHONPATH={shadow} exec {base} "$@"\n')
    res = _run_stock(repo, tmp_path / "bin", "bash", "scripts/setup.sh")
    minor = f"{sys.version_info[0]}.{sys.version_info[1]}"
    assert res.returncode != 0
    assert "ensurepip module is missing" in res.stderr
    assert f"sudo apt-get install python{minor}-venv" in res.stderr
    assert not (repo / ".venv").exists()


def test_in_env_before_setup_says_to_run_it(tmp_path):
    base = _base_interpreter()
    repo = _copy_scripts(tmp_path / "repo")
    _write_exe(tmp_path / "bin/python3", f'#!/bin/sh\nexec {base} "$@"\n')
    res = _run_stock(repo, tmp_path / "bin", "scripts/in-env", "python", "-c", "pass")
    assert res.returncode == 1
    assert "run `bash scripts/setup.sh` first" in res.stderr


def _setup_check():
    spec = importlib.util.spec_from_file_location("setup_check", REPO / "scripts/setup_check.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _fake_dist(site: Path, files: list[str], record: bool = True) -> md.Distribution:
    info = site / "demo_pkg-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: demo-pkg\nVersion: 1.0\n")
    if record:
        rows = [*files, "demo_pkg-1.0.dist-info/METADATA", "demo_pkg-1.0.dist-info/RECORD"]
        (info / "RECORD").write_text("".join(f"{r},,\n" for r in rows))
    return md.PathDistribution(info)


def test_half_installed_distributions_are_detected(tmp_path):
    check = _setup_check()
    (tmp_path / "demo_pkg").mkdir()
    (tmp_path / "demo_pkg/__init__.py").write_text("")
    complete = _fake_dist(tmp_path, ["demo_pkg/__init__.py"])
    assert check._incomplete(complete) is None
    (tmp_path / "demo_pkg/__init__.py").unlink()  # a file the install wrote, then lost (interrupted run)
    assert check._incomplete(complete) == "missing demo_pkg/__init__.py"
    no_record = _fake_dist(tmp_path / "other", [], record=False)
    assert check._incomplete(no_record) == "no RECORD file"


def test_stamp_key_follows_the_setup_files(tmp_path):
    repo = _copy_scripts(tmp_path / "repo")
    cmd = [sys.executable, str(repo / "scripts/setup_check.py"), "key"]
    key = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    assert subprocess.run(cmd, capture_output=True, text=True, check=True).stdout == key
    with (repo / "pyproject.toml").open("a") as f:
        f.write("\n# changed\n")
    assert subprocess.run(cmd, capture_output=True, text=True, check=True).stdout != key
