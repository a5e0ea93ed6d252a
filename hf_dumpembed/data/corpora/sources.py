"""Fetching the raw sources: Debian packages (``apt-get download`` + ``dpkg-deb -x``) and the gensim wheel."""

from __future__ import annotations

import importlib.util
import logging
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

logger = logging.getLogger(__name__)

GENSIM_REQUIREMENT = "gensim==4.4.*"
GENSIM_WIKI_MEMBER = "gensim/test/test_data/enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"


def _run(command: list[str], cwd: Path, what: str) -> None:
    if shutil.which(command[0]) is None:
        raise FileNotFoundError(f"{command[0]!r} is not available; {what} needs a Debian-like system with it.")
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        tail = (result.stderr or result.stdout).strip().splitlines()[-3:]
        raise OSError(f"`{' '.join(command)}` failed ({what}): {' | '.join(tail)}")


def apt_extract(package: str, workdir: Path, update: bool = True) -> Path:
    """``apt-get download PACKAGE`` into ``workdir`` and unpack it with ``dpkg-deb -x``; returns the root.

    Nothing is installed. ``apt-get update`` runs first when ``update`` (the package lists may be empty).
    """
    workdir.mkdir(parents=True, exist_ok=True)
    if update:
        _run(["apt-get", "update"], workdir, f"refreshing the package lists for {package}")
    _run(["apt-get", "download", package], workdir, f"downloading {package}")
    debs = sorted(workdir.glob(f"{package}_*.deb"))
    if not debs:
        raise FileNotFoundError(f"apt-get download {package} left no {package}_*.deb in {workdir}.")
    root = workdir / package
    _run(["dpkg-deb", "-x", str(debs[-1]), str(root)], workdir, f"unpacking {debs[-1].name}")
    logger.info("unpacked %s into %s", debs[-1].name, root)
    return root


def deb_version(workdir: Path, package: str) -> str:
    """The version in the downloaded ``PACKAGE_VERSION_ARCH.deb`` file name (for the manifest)."""
    debs = sorted(workdir.glob(f"{package}_*.deb"))
    return debs[-1].name.split("_")[1] if debs else "unknown"


def gensim_wiki_dump(workdir: Path) -> tuple[Path, str]:
    """The gensim test Wikipedia sample (bz2 XML) and gensim's version.

    Read from an installed gensim when there is one (without importing it), else from the wheel fetched with
    ``pip download gensim==4.4.* --no-deps``.
    """
    spec = importlib.util.find_spec("gensim")
    if spec is not None and spec.submodule_search_locations:
        path = Path(list(spec.submodule_search_locations)[0]).parent / GENSIM_WIKI_MEMBER
        if path.is_file():
            from importlib.metadata import version

            return path, version("gensim")
    workdir.mkdir(parents=True, exist_ok=True)
    wheels = sorted(workdir.glob("gensim-4.4*.whl"))
    if not wheels:
        _run(
            [sys.executable, "-m", "pip", "download", GENSIM_REQUIREMENT, "--no-deps", "-d", str(workdir)],
            workdir,
            "fetching the gensim wheel for its Wikipedia test sample",
        )
        wheels = sorted(workdir.glob("gensim-4.4*.whl"))
    if not wheels:
        raise FileNotFoundError(f"pip download {GENSIM_REQUIREMENT} left no wheel in {workdir}.")
    with zipfile.ZipFile(wheels[-1]) as wheel:
        wheel.extract(GENSIM_WIKI_MEMBER, workdir)
    return workdir / GENSIM_WIKI_MEMBER, wheels[-1].name.split("-")[1]
