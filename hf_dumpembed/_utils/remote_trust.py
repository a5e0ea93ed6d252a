"""Which model folders may run their Python here: only those whose code is hf_dumpembed's own remote code.

A folder loaded with ``trust_remote_code=True`` runs every file its ``config.json`` ``auto_map`` names (and a
``tokenizer_config.json`` ``auto_map``, and any non-stock class in ``modules.json``). Before a command loads a
folder, each such file must be byte-identical to a file of this package's ``hf_dumpembed/remote/`` as installed now,
or to a released version of it recorded below by sha256. Anything else is refused, naming the files, unless the
user says ``--trust-remote-code`` (Python: ``trust_remote_code=True``).
"""

from __future__ import annotations

import json
from pathlib import Path

from .hashing import sha256_file

REMOTE_DIR = Path(__file__).resolve().parent.parent / "remote"
REMOTE_FILES = ("configuration_dumpembed.py", "modeling_dumpembed.py")
# sha256 of released versions of the remote code, by file: folders built by those versions keep loading after the
# package's own copy changes. The first entries are the files as released at the start of this record.
RELEASED_REMOTE_SHA256: dict[str, frozenset[str]] = {
    # the release of 2026-12-01 (main at 04f7804), the first bring-your-own-model commit of that evening, the
    # release of 2026-12-02 (main at f43f506; its configuration file is the evening's) and that day's second one
    # (truncate_dim, the prefix cache)
    "configuration_dumpembed.py": frozenset({"b72c2864b75175ef0904ed7ad5e7baa37c900a3686233426c424b21dc9615c56",
                                             "a44d5ea29cfc51f28324d7b71f195e911583b50b640a90f5f8be965357001b3d",
                                             "474f9b2d5c167dcd42b55a05ca770c09fe43e2800ec5a5bbb7dbbe4eb103d45d"}),
    "modeling_dumpembed.py": frozenset({"8372833c325f30a0757586de91289b551385d128b3d279dc8da03df71c5eda11",
                                        "4b1e04ff591502502861b514e75c755c67cbfecedaf90621e32fe8d4f5d90961",
                                        "cc8f72730538c14537730228877684ec440f01b1ad890c361a87cea2fc53b169",
                                        "908911595b18d16258babe2843b198c60e98d16cb0d61b152c074b7edc5c16b3"}),
}
# sentence-transformers module classes that are the library's own (modules.json "type"): no folder code runs.
STOCK_MODULE_PREFIX = "sentence_transformers."
TRUST_HINT = ("Read those files; if you trust whoever made the folder, run the command again with "
              "--trust-remote-code (Python: trust_remote_code=True), or rebuild the folder with `hf-dumpembed build`.")


class UntrustedRemoteCode(ValueError):
    """A folder carries code that is not hf_dumpembed's own and the user did not say to trust it."""


def known_remote_hashes() -> dict[str, set[str]]:
    """File name -> the sha256 values accepted as ours: this installed version's and the released ones."""
    known = {name: set(hashes) for name, hashes in RELEASED_REMOTE_SHA256.items()}
    for name in REMOTE_FILES:
        known.setdefault(name, set()).add(sha256_file(REMOTE_DIR / name))
    return known


def _read_json(path: Path) -> object:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None


def auto_map_files(auto_map: object) -> tuple[set[str], list[str]]:
    """The ``*.py`` files an ``auto_map`` names, and the references to code in other repos (``repo--module.Class``)."""
    files, elsewhere = set(), []
    for target in (auto_map or {}).values() if isinstance(auto_map, dict) else []:
        for ref in target if isinstance(target, list) else [target]:
            if not isinstance(ref, str):
                continue
            if "--" in ref:
                elsewhere.append(ref)
            else:
                files.add(ref.rsplit(".", 1)[0] + ".py")
    return files, elsewhere


def foreign_code(folder: str | Path) -> list[str]:
    """What in ``folder`` would run code that is not hf_dumpembed's own remote code (empty: nothing)."""
    folder = Path(folder)
    config = _read_json(folder / "config.json")
    files, elsewhere = auto_map_files(config.get("auto_map") if isinstance(config, dict) else None)
    found = [f"config.json auto_map names code in another repo: {ref}" for ref in elsewhere]
    known = known_remote_hashes()
    for name in sorted(files):
        path = folder / name
        if name not in known:
            found.append(f"{name} (named by config.json auto_map) is not a file of hf_dumpembed's remote code")
        elif path.is_symlink() or not path.is_file():
            found.append(f"{name} (named by config.json auto_map) is missing or not a regular file")
        elif (digest := sha256_file(path)) not in known[name]:
            found.append(f"{name} differs from every version of hf_dumpembed's {name} (sha256 {digest[:12]}…)")
    tokenizer_config = _read_json(folder / "tokenizer_config.json")
    if isinstance(tokenizer_config, dict) and tokenizer_config.get("auto_map"):
        found.append("tokenizer_config.json has an auto_map (custom tokenizer code); hf_dumpembed writes none")
    modules = _read_json(folder / "modules.json")
    for module in modules if isinstance(modules, list) else []:
        kind = module.get("type") if isinstance(module, dict) else None
        if isinstance(kind, str) and not kind.startswith(STOCK_MODULE_PREFIX):
            found.append(f"modules.json names a module class that is not sentence-transformers' own: {kind}")
    return found


def require_trusted_code(folder: str | Path, trust_remote_code: bool = False) -> None:
    """Refuse (UntrustedRemoteCode) to go on with a folder whose code is not ours, unless ``trust_remote_code``."""
    if trust_remote_code:
        return
    found = foreign_code(folder)
    if found:
        lines = "\n".join(f"  - {item}" for item in found)
        raise UntrustedRemoteCode(f"{folder} carries code that is not hf_dumpembed's own remote code, and loading it "
                                  f"would run that code on this machine:\n{lines}\n{TRUST_HINT}")
