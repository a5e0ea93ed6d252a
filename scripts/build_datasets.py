"""Build the real-text retrieval collections (ManPages, PyFAQ, StdlibCode + StdlibCodeTrain, WikiLong).

Usage: python scripts/build_datasets.py [--out data] [--only NAME ...]
Deterministic; prints each collection's sizes and sha256 (also in OUT/<Name>/manifest.json).
Debian sources are fetched with `apt-get download` into a temporary folder (nothing installed or committed).
"""

from __future__ import annotations

import argparse
import logging

from hf_dumpembed.data.corpora import BUILDERS, COLLECTIONS, build_datasets


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="data", help="output folder (default: data)")
    also = "; ".join(f"{c.builder} also writes {c.name}" for c in COLLECTIONS if c.builder != c.name)
    parser.add_argument("--only", nargs="+", choices=list(BUILDERS), default=None,
                        help=f"build only these ({also})")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    for summary in build_datasets(args.out, args.only):
        print(summary.describe(), flush=True)  # noqa: T201 - the script's report, one line per collection


if __name__ == "__main__":
    main()
