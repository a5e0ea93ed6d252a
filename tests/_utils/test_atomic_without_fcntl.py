"""Where Python has no ``fcntl`` module (Windows), the builder and the trainer import and output locks still hold:
one writer per output, the second refused naming the first's pid, a killed holder's lock released."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
NO_FCNTL = "import sys\nsys.modules['fcntl'] = None  # `import fcntl` fails, as on Windows\n"
HOLDER = NO_FCNTL + textwrap.dedent(
    """
    import time
    from pathlib import Path
    import hf_dumpembed.model.builder, hf_dumpembed.training.trainer  # both import without fcntl
    from hf_dumpembed._utils.atomic import output_lock

    with output_lock(Path(sys.argv[1])):
        Path(sys.argv[2]).write_text("holding")
        time.sleep(60)
    """
)
WRITER = NO_FCNTL + textwrap.dedent(
    """
    from pathlib import Path
    from hf_dumpembed._utils.atomic import OutputBusy, output_lock

    try:
        with output_lock(Path(sys.argv[1])):
            print("locked")
    except OutputBusy as busy:
        print(busy)
    """
)


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO), "PYTHONWARNINGS": "ignore"}


def _write(out: Path) -> str:
    result = subprocess.run([sys.executable, "-c", WRITER, str(out)], env=_env(), cwd=REPO, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_without_fcntl_the_builder_imports_and_a_lock_excludes_a_second_writer(tmp_path):
    out, ready = tmp_path / "model", tmp_path / "ready"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(out), str(ready)], env=_env(), cwd=REPO,
                              stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(3000):
            if ready.exists() or holder.poll() is not None:
                break
            time.sleep(0.05)
        assert ready.exists(), holder.stderr.read() if holder.poll() is not None else "the holder never took the lock"
        said = _write(out)
        assert re.match(rf"{re.escape(str(out))} is being written by another run \(pid {holder.pid}[,)]", said), said
    finally:
        holder.kill()
        holder.wait()
        holder.stderr.close()
    # The killed holder's lock file is left behind; its pid is gone, so the next writer takes the lock.
    assert _write(out) == "locked"
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".model.")) == []
