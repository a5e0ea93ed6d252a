"""The benches: each module is a subcommand of ``python scripts/bench/benchmarks.py`` (``fit_cost.py`` is
``fit-cost``) with ``register(subparsers)`` and ``run(args)``; modules whose name starts with ``_`` are helpers."""
