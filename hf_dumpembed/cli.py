"""The ``hf-dumpembed`` command: one subcommand per library function, each a thin layer over it."""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
import traceback
from collections.abc import Sequence

from . import commands as command_modules

DESCRIPTION = """\
Build, train, fit, evaluate and publish DumpEmbed text-embedding models: a tokenizer that prepends K trainable
[DUMP] tokens, any transformers backbone, pooling, a stored linear projection (SpecTemp, EmbedFilter, PCA, ...)
and L2 normalisation, in one folder that loads identically through AutoModel (trust_remote_code=True),
SentenceTransformer and MTEB. Typical order: build -> train -> fit -> eval -> card -> push.
"""

# Subcommand groups, in the order `--help` lists them: each module's register() adds its subparsers.
COMMAND_GROUPS = ("model", "onnx", "serve", "evaluate", "analyze", "fit", "publish", "quickstart", "train")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hf-dumpembed", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug messages")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    for group in COMMAND_GROUPS:
        importlib.import_module(f"{command_modules.__name__}.{group}").register(commands)
    return parser


# What to do after Ctrl-C, per command.
RESUME_HINTS = {
    "quickstart": "run the same command again to resume (finished steps are skipped, training continues from its "
                  "last checkpoint)",
    "train": "run it again with --resume to continue from the last checkpoint",
}


# Errors the user can act on (bad flags, existing folders, missing packages): their message says what to do.
USER_ERRORS = (ValueError, FileExistsError, OSError, ImportError)


def file_of(error: BaseException, suffixes: tuple[str, ...] = (".safetensors",)) -> str | None:
    """The file the call that raised ``error`` was reading or writing (Rust extensions' errors do not name it): the
    path-valued variables of the failing frames that end with one of ``suffixes``, innermost first, an existing file
    preferred."""
    named = []
    for frame, _ in reversed(list(traceback.walk_tb(error.__traceback__))):
        for value in frame.f_locals.values():
            path = os.fspath(value) if isinstance(value, (str, os.PathLike)) else None
            if isinstance(path, str) and path.endswith(suffixes):
                named.append(path)
    return next((path for path in named if os.path.isfile(path)), named[0] if named else None)


def is_rust_panic(error: BaseException) -> bool:
    """pyo3's ``pyo3_runtime.PanicException`` (raised by tokenizers and safetensors when their Rust code panics): a
    BaseException that no module exports, so it is told by its type's module and name."""
    kind = type(error)
    return kind.__module__ == "pyo3_runtime" and kind.__name__ == "PanicException"


def rust_panic_message(error: BaseException) -> str:
    """One line for a Rust panic, naming the file being read when the failing frames name one."""
    where = file_of(error, ("tokenizer.json", ".safetensors")) or "a model file (tokenizer.json or the weights)"
    return (f"{where} could not be processed: the Rust library reading it panicked ({str(error).strip()}); the file "
            "is malformed or hostile: replace it with the source's own.")


def safetensors_message(error: BaseException) -> str:
    """One line for a safetensors error: a full disk / quota / read-only file system, else a file that could not
    be read (damaged: cut short, padded, or not safetensors at all)."""
    from ._utils.atomic import disk_errno, disk_error_message, failed_path

    code = disk_errno(error)
    file = file_of(error) or failed_path(error)
    if code is not None:
        return disk_error_message(code, file or "a safetensors file")
    if "os error" in str(error):
        return f"could not read {file or 'a safetensors file'} ({error}): check that it exists and can be read."
    return f"{file or 'a safetensors weights file'} is damaged ({error}): rebuild or re-download it."


def error_message(error: BaseException) -> str | None:
    """The one-line message for an error the command reports without a traceback; None for anything else (a bug,
    shown with its traceback)."""
    from huggingface_hub.errors import StrictDataclassError
    from safetensors import SafetensorError

    from ._utils.atomic import OutputWriteError, disk_errno, disk_error_message, failed_path

    if isinstance(error, SafetensorError):  # safetensors' Rust error type: not an OSError / ValueError
        return safetensors_message(error)
    if isinstance(error, StrictDataclassError):  # a config field refused by its annotation or a validate_* check
        return str(error.__cause__ or error)
    if not isinstance(error, USER_ERRORS):
        return None
    code = disk_errno(error)
    if code is not None and not isinstance(error, OutputWriteError):  # a writer outside the staged outputs
        return disk_error_message(code, failed_path(error) or "the output")
    return str(error)


def main(argv: Sequence[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    # Our own progress at INFO; third-party chatter (sentence-transformers, mteb) only from WARNING up.
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s"
    )
    logging.getLogger("hf_dumpembed").setLevel(logging.DEBUG if args.verbose else logging.INFO)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:
        args.func(args)
    except KeyboardInterrupt:
        hint = RESUME_HINTS.get(args.command, "outputs are written only when complete: nothing half-written is left")
        sys.stderr.write(f"\nhf-dumpembed {args.command}: interrupted; {hint}.\n")
        raise SystemExit(130) from None
    except Exception as error:
        message = error_message(error)
        if message is None:
            raise
        raise SystemExit(f"hf-dumpembed {args.command}: error: {message}") from None
    except BaseException as error:  # only pyo3's PanicException is reported here; everything else goes on unchanged
        if not is_rust_panic(error):
            raise
        raise SystemExit(f"hf-dumpembed {args.command}: error: {rust_panic_message(error)}") from None


if __name__ == "__main__":
    main()
