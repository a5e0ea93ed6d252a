"""The record of hf_dumpembed's remote code: which bytes of each remote file are ours.

A trusted folder's ``*.py`` files (`hf_dumpembed.model.folder_schema`, the one check of a folder's shape) must be
exactly the files of one release's set, each byte-identical to this package's ``hf_dumpembed/remote/`` file of that
name as installed now, or to a version released in that set, recorded below by sha256, so that folders built by a
release keep loading after the code changes.
"""

from __future__ import annotations

from pathlib import Path

from .hashing import sha256_file

REMOTE_DIR = Path(__file__).resolve().parent.parent / "remote"
# The remote-code files of the installed version, copied into every folder it saves (the modeling file imports the
# other two relatively, and transformers copies what it imports).
REMOTE_FILES = ("configuration_dumpembed.py", "modeling_dumpembed.py", "prefix_cache_dumpembed.py")
# The remote-code file sets of the releases, oldest first: file name -> the sha256 of each version released in that
# set (a folder whose files come from different sets, a modeling file without the prefix cache it imports, is
# refused). Each release since the three-file one has a set of its own.
RELEASED_REMOTE_SETS: tuple[dict[str, frozenset[str]], ...] = (
    # Two files: the releases of 2026-12-01 and 2026-12-02.
    {
        "configuration_dumpembed.py": frozenset({
            "b72c2864b75175ef0904ed7ad5e7baa37c900a3686233426c424b21dc9615c56",
            "a44d5ea29cfc51f28324d7b71f195e911583b50b640a90f5f8be965357001b3d",
            "474f9b2d5c167dcd42b55a05ca770c09fe43e2800ec5a5bbb7dbbe4eb103d45d",
        }),
        "modeling_dumpembed.py": frozenset({
            "8372833c325f30a0757586de91289b551385d128b3d279dc8da03df71c5eda11",
            "4b1e04ff591502502861b514e75c755c67cbfecedaf90621e32fe8d4f5d90961",
            "cc8f72730538c14537730228877684ec440f01b1ad890c361a87cea2fc53b169",
            "908911595b18d16258babe2843b198c60e98d16cb0d61b152c074b7edc5c16b3",
        }),
    },
    # Three files (the prefix cache in its own module), from the release of 2026-12-03 on.
    {"configuration_dumpembed.py": frozenset({"73189d80d5b0a0ab80e5461f48bd23b74533cfee03031f7adaa9028a0b5168dc"}),
     "modeling_dumpembed.py": frozenset({"2a5a04efbd90f18ef938df283c67a823f6dc51c4d989b4ba33dafdc35299a75f"}),
     "prefix_cache_dumpembed.py": frozenset({"3d008059f593babdec9e1e8978ac45d1332af48ba570baeab4b7b5256f9c35da"})},
    {"configuration_dumpembed.py": frozenset({"078f26e64e520722d293d8f6f27ea6fb6c40e83a429ab9f6136301a56fc04460"}),
     "modeling_dumpembed.py": frozenset({"42fcac6c9b12002efe68c0be3dab66d1a20030c84bfdf5b7b6d53e38a4b54e14"}),
     "prefix_cache_dumpembed.py": frozenset({"3d008059f593babdec9e1e8978ac45d1332af48ba570baeab4b7b5256f9c35da"})},
    {"configuration_dumpembed.py": frozenset({"9b727b65cd2ff1ad066176cf47d951d70c79d63c9d6c267c17d49ccde5234ecc"}),
     "modeling_dumpembed.py": frozenset({"70f274e768a6e99d667091d12d4b241551ec0f5904b0d197da69f2e6df6ea408"}),
     "prefix_cache_dumpembed.py": frozenset({"1d5caf2991e01fad68990abfefbe8e15b60240ca988f8ce356855a12d812221c"})},
    {"configuration_dumpembed.py": frozenset({"6534a0f05fb7cc46efb754a563a1d58d5d051a6ad57fd9340d63b5f918d6aadd"}),
     "modeling_dumpembed.py": frozenset({"f4fb8de2d1c70a9776d18d2e8c685b9a759eb71b3bbc0e6cdf7001bef3575dd1"}),
     "prefix_cache_dumpembed.py": frozenset({"1d5caf2991e01fad68990abfefbe8e15b60240ca988f8ce356855a12d812221c"})},
)
# Every remote-code file name of any release.
REMOTE_FILE_NAMES = tuple(sorted({name for files in RELEASED_REMOTE_SETS for name in files} | set(REMOTE_FILES)))


def known_remote_sets() -> list[dict[str, set[str]]]:
    """Each release's file set -> file name -> the sha256 values accepted for it in that set, and the installed
    version's files as a set of their own when no release records them together (never added to an older set of the
    same names: its files were not written beside them)."""
    known = [{name: set(hashes) for name, hashes in files.items()} for files in RELEASED_REMOTE_SETS]
    installed = {name: {sha256_file(REMOTE_DIR / name)} for name in REMOTE_FILES}
    if not any(files.keys() == installed.keys() and all(installed[n] <= files[n] for n in files) for files in known):
        known.append(installed)
    return known


def known_remote_hashes(sets: list[dict[str, set[str]]] | None = None) -> dict[str, set[str]]:
    """File name -> the sha256 values accepted as ours in any set: this installed version's and the released ones
    (``sets``: `known_remote_sets()`, when the caller has it already)."""
    known: dict[str, set[str]] = {}
    for files in known_remote_sets() if sets is None else sets:
        for name, hashes in files.items():
            known.setdefault(name, set()).update(hashes)
    return known
