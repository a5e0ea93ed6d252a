"""The ``hf-dumpembed`` subcommands, one module per verb group, each a thin layer over the library.

Each module defines ``register(commands)``, which adds its subparsers (with ``set_defaults(func=...)``) to the
``argparse`` subparsers object; ``cli.build_parser`` calls them in the order of ``cli.COMMAND_GROUPS``.
"""
