"""Train a DumpEmbed model from a YAML run config: the same as `hf-dumpembed train CONFIG [--resume]`.

    python scripts/train.py scripts/configs/minilm-dump4-stdlibcode.yaml
    torchrun --nproc_per_node 2 scripts/train.py CONFIG     # DDP; only rank 0 writes
"""

from __future__ import annotations

import sys

from hf_dumpembed.cli import main

if __name__ == "__main__":
    main(["train", *sys.argv[1:]])
