"""Check a model folder as users receive it and push it to the Hugging Face Hub (same as `hf-dumpembed push`).

    python scripts/push_to_hub.py MODEL OWNER/NAME [--private] [--branch B] [--commit-message M] [--dry-run]
"""

from __future__ import annotations

import sys

from hf_dumpembed.cli import main

if __name__ == "__main__":
    main(["push", *sys.argv[1:]])
