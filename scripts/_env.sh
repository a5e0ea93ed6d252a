# Shared by scripts/setup.sh and scripts/in-env (sourced, not run): which Python environment this checkout uses.
#
# The interpreter is $PYTHON if set, else the first `python3` (then `python`) on PATH. If that interpreter runs
# inside a virtual environment (venv, virtualenv, pyenv-virtualenv, an activated .venv) or a conda environment,
# that environment is used. Anything else — a system Python (Debian/Ubuntu mark theirs externally managed,
# PEP 668), a pyenv version, Homebrew, python.org — is left untouched: the checkout gets its own `.venv/`,
# made from that interpreter with `python -m venv`.
#
# hf_env_resolve sets: HF_BASE_PY (the interpreter found), HF_ENV_KIND (venv | conda | repo-venv) and
# HF_ENV_BIN (the bin directory whose python / hf-dumpembed / pytest are used). Returns 1 with a message when
# no Python is found.

HF_REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

hf_env_resolve() {
  HF_BASE_PY="${PYTHON:-$(command -v python3 || command -v python || true)}"
  if [ -z "$HF_BASE_PY" ]; then
    echo "[setup] no python3 on PATH. Install Python >= 3.10 (Debian/Ubuntu: sudo apt-get install python3 python3-venv)," >&2
    echo "[setup] or point PYTHON at one: PYTHON=/path/to/python3 bash scripts/setup.sh" >&2
    return 1
  fi
  local info
  # One line: "<kind> <bin dir>". sys.prefix != sys.base_prefix in a venv (real_prefix: old virtualenv).
  info="$("$HF_BASE_PY" -c '
import os, sys
venv = sys.prefix != getattr(sys, "base_prefix", sys.prefix) or hasattr(sys, "real_prefix")
conda = os.path.isdir(os.path.join(sys.prefix, "conda-meta"))
print("venv" if venv else "conda" if conda else "base", os.path.dirname(sys.executable))
' 2>/dev/null)" || info="base -"
  case "$info" in
    venv\ *|conda\ *) HF_ENV_KIND="${info%% *}"; HF_ENV_BIN="${info#* }" ;;
    *) HF_ENV_KIND="repo-venv"; HF_ENV_BIN="$HF_REPO/.venv/bin" ;;
  esac
}
