"""``python scripts/bench/benchmarks.py dump-recipe`` under the name its runs were started with, so that they resume
with the same command line (the bench: benches/dump_recipe.py)."""

import sys

from benchmarks import RUNNER_COMMAND, main

if __name__ == "__main__":
    sys.argv[:1] = [RUNNER_COMMAND.split()[1], "dump-recipe"]  # what command_line() records: the runner
    sys.exit(main())
