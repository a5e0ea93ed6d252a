"""Subcommand groups of ``hf-dumpembed`` beyond the core ones in ``cli.py``.

Each module here defines ``register(commands)``, which adds its subparsers (with ``set_defaults(func=...)``)
to the ``argparse`` subparsers object; ``cli.build_parser`` calls them in name order.
"""
