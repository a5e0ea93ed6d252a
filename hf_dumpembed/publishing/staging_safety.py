"""What `push` may stage: regular files inside the folder whose content is what their name says, and no secrets.

The folder is walked without following links. A symbolic link, a hard link shared with a file outside the folder,
a FIFO, socket or device is refused: an upload must never carry a file from elsewhere on the machine. Every file
is then checked by content, not by name: ``*.safetensors`` by safetensors' own reader (header length, JSON header,
dtypes, shapes and offsets that cover the data exactly) and two rules of its own, JSON and YAML by parsing, PNG by its
signature and chunks (lengths, CRCs, IHDR first, IDAT, IEND), text files as UTF-8, and nothing may look like a
pickle or a zip archive. ``training/`` holds only the side files the trainer writes (by name and content type).
Every file (and each safetensors header's metadata) is scanned for credentials by detect-secrets (plus the plugins
of ``secret_plugins.py``), and the raw bytes of every file and every relative path by the byte scan
(``secret_bytes.py``); the report names the file and the line or byte offset and the kind of secret, never the
secret, and a name holding one is shown masked.

Files are opened relative to the folder with ``O_NOFOLLOW`` on every path component, and staging re-checks that
the file is still the one that was verified (same device, inode, size and modification time). A PNG is staged
with its image chunks only (`stripped_png`): no text chunk, no other ancillary chunk, nothing after IEND.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import stat
import struct
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from safetensors import SafetensorError, safe_open

from ..model.folder_schema import TRAINING_SIDE_FILES
from .secret_bytes import (
    PNG_IMAGE_CHUNKS,
    PNG_SIGNATURE,
    ByteFinding,
    PngChunk,
    path_findings,
    png_chunks,
    redact,
    scan_bytes,
    scan_stream,
)

logger = logging.getLogger(__name__)

SAFETENSORS_DTYPES = {"BOOL": 1, "U8": 1, "I8": 1, "F8_E4M3": 1, "F8_E5M2": 1, "I16": 2, "U16": 2, "F16": 2,
                      "BF16": 2, "I32": 4, "U32": 4, "F32": 4, "I64": 8, "U64": 8, "F64": 8, "C64": 8}
MAX_TEXT_SCAN_BYTES = 512 * 2**20
# detect-secrets' credential detectors, by class name (its high-entropy and public-IP detectors are left out: a
# model folder is full of sha256 hashes, vocabularies and numbers), plus this package's two (secret_plugins.py).
SECRET_DETECTORS = (
    "AWSKeyDetector", "ArtifactoryDetector", "AzureStorageKeyDetector", "BasicAuthDetector", "CloudantDetector",
    "DiscordBotTokenDetector", "GitHubTokenDetector", "GitLabTokenDetector", "IbmCloudIamDetector",
    "IbmCosHmacDetector", "JwtTokenDetector", "KeywordDetector", "MailchimpDetector", "NpmDetector",
    "OpenAIDetector", "PrivateKeyDetector", "PypiTokenDetector", "SendGridDetector", "SlackDetector",
    "SoftlayerDetector", "SquareOAuthDetector", "StripeDetector", "TelegramBotTokenDetector", "TwilioKeyDetector",
)
OWN_DETECTORS = ("HuggingFaceTokenDetector", "ProseKeywordDetector")
# Large vocabularies are not searched for local paths (a token may look like one).
VOCABULARY_FILES = ("tokenizer.json", "vocab.json", "vocab.txt", "merges.txt")
# Text formats by suffix; anything else is binary and only scanned for secrets and pickle/zip magic.
TEXT_SUFFIXES = (".json", ".yaml", ".yml", ".md", ".txt", ".py", ".jinja", ".gitattributes")
PICKLE_OR_ZIP = (b"PK\x03\x04", b"\x80\x02", b"\x80\x03", b"\x80\x04", b"\x80\x05")


@dataclass(frozen=True)
class Identity:
    """What identifies a verified file: it is staged only while it is still this file."""

    device: int
    inode: int
    size: int
    mtime_ns: int

    @classmethod
    def of(cls, info: os.stat_result) -> Identity:
        return cls(info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)


@dataclass
class FolderScan:
    """The regular files of a folder (relative POSIX path -> identity) and what was refused."""

    files: dict[str, Identity] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def scan_folder(folder: Path) -> FolderScan:
    """Walk ``folder`` without following links: regular files, and a problem for each link or special file."""
    scan = FolderScan()
    root = folder.resolve()
    links_inside: dict[tuple[int, int], int] = {}
    infos: dict[str, os.stat_result] = {}
    for directory, dirs, names in os.walk(root, followlinks=False):
        base = Path(directory)
        for name in sorted(dirs + names):
            path = base / name
            rel = path.relative_to(root).as_posix()
            info = path.lstat()
            if stat.S_ISLNK(info.st_mode):
                target = os.path.realpath(path)
                where = "outside the folder" if os.path.commonpath([target, str(root)]) != str(root) else \
                    "inside the folder"
                scan.problems.append(redact(f"{rel} is a symbolic link (to a path {where}): only regular files are "
                                            "published; replace it with a copy of the file (cp --remove-destination)"))
            elif stat.S_ISDIR(info.st_mode):
                continue
            elif not stat.S_ISREG(info.st_mode):
                scan.problems.append(redact(f"{rel} is not a regular file (a FIFO, socket or device): remove it"))
            else:
                infos[rel] = info
                links_inside[(info.st_dev, info.st_ino)] = links_inside.get((info.st_dev, info.st_ino), 0) + 1
    for rel, info in sorted(infos.items()):
        outside = info.st_nlink - links_inside[(info.st_dev, info.st_ino)]
        if outside > 0:
            scan.problems.append(redact(f"{rel} is a hard link shared with {outside} file(s) outside the folder: "
                                        "replace it with a copy (cp --remove-destination SRC DST) so that nothing "
                                        "from elsewhere is published"))
        else:
            scan.files[rel] = Identity.of(info)
    return scan


def open_inside(root: Path, rel: str) -> int:
    """A read-only descriptor of ``root/rel``, refusing a symbolic link at any component (``O_NOFOLLOW``)."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(root, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        for part in rel.split("/")[:-1]:
            if part in ("", ".", ".."):
                raise OSError(f"{rel}: unexpected path component {part!r}")
            next_fd = os.open(part, flags | getattr(os, "O_DIRECTORY", 0), dir_fd=fd)
            os.close(fd)
            fd = next_fd
        return os.open(rel.split("/")[-1], flags, dir_fd=fd)
    finally:
        os.close(fd)


def _by_descriptor(fd: int) -> str:
    """A path that opens the file ``fd`` has open (its inode, whatever its name points to now)."""
    proc = f"/proc/self/fd/{fd}"
    return proc if os.path.exists(proc) else f"/dev/fd/{fd}"


def safetensors_problem(handle, size: int) -> str | None:
    """Why the open binary ``handle`` (of ``size`` bytes) is not a safetensors file, or None when it is one.

    safetensors' own reader (``safe_open`` over this very descriptor: mapped, no tensor read) checks the header
    length (at most 100 MB), the JSON header, dtypes, shapes and offsets that cover the data exactly; this adds the
    two rules it lets through: a tensor entry holds only dtype, shape and data_offsets (other header text would
    escape the scan of ``__metadata__``), and its dtype is one of `SAFETENSORS_DTYPES`.
    """
    if size < 8:
        return "shorter than the 8-byte safetensors header length"
    try:
        with safe_open(_by_descriptor(handle.fileno()), "np"):
            pass
    except SafetensorError as error:
        reason = str(error).removeprefix("Error while deserializing header: ")
        return f"safetensors cannot read it ({reason}): not a safetensors file"
    _, header = _safetensors_header(handle)
    header.pop("__metadata__", None)
    for name, entry in header.items():
        if extra := sorted(set(entry) - {"dtype", "shape", "data_offsets"}):
            return f"tensor {name!r} has keys besides dtype/shape/data_offsets: {extra}"
        if entry["dtype"] not in SAFETENSORS_DTYPES:
            return f"tensor {name!r} has an unknown dtype {entry['dtype']!r}"
    return None


def find_secrets(rel: str, data: bytes) -> list[tuple[str, int]]:
    """(kind, line number) of each credential detect-secrets finds in the bytes of ``rel`` (scanned under its own
    file name, so that its rules for that file type apply)."""
    from detect_secrets import SecretsCollection
    from detect_secrets.settings import transient_settings

    name = rel.rsplit("/", 1)[-1]
    plugins_file = Path(__file__).with_name("secret_plugins.py").resolve().as_uri()
    settings = {"plugins_used": [{"name": detector} for detector in SECRET_DETECTORS]
                + [{"name": detector, "path": plugins_file} for detector in OWN_DETECTORS]}
    with tempfile.TemporaryDirectory(prefix="hf-dumpembed-scan-") as scratch:
        (Path(scratch) / name).write_text(data.decode("utf-8", "replace"), encoding="utf-8")
        with transient_settings(settings):
            collection = SecretsCollection(root=scratch)
            collection.scan_file(name)
        found = {(secret.type, secret.line_number) for file in collection.files for secret in collection[file]}
    return sorted(found, key=lambda item: (item[1], item[0]))


def secrets_problem(rel: str, data: bytes, where: str = "", scan_name: str | None = None,
                    in_bytes: list[ByteFinding] | None = None) -> str | None:
    """The report line naming each credential found in ``rel`` by kind and line (never the secret), or None;
    ``scan_name``: the file name whose rules apply (default: ``rel``'s); ``in_bytes``: what the byte scan found in
    the file, listed by byte offset after the lines."""
    found = find_secrets(scan_name or rel, data)
    listed = [f"line {line}: {kind}" for kind, line in found] + [finding.describe() for finding in in_bytes or []]
    if not listed:
        return None
    who = " and ".join(name for name, hits in (("detect-secrets", found), ("the byte scan", in_bytes)) if hits)
    return (f"{rel}{where} contains what looks like a credential ({_listing(listed)}): never publish credentials; "
            f"remove it from the file ({who} found it)")


def _listing(items: list[str], most: int = 10) -> str:
    return ", ".join(items[:most]) + (" …" if len(items) > most else "")


def path_problem(rel: str) -> str | None:
    """A problem when the relative path ``rel`` (a component or the whole) holds what looks like a credential; the
    name is shown masked."""
    kinds = path_findings(rel)
    if not kinds:
        return None
    return redact(f"{rel} has what looks like a credential in its name ({', '.join(kinds)}): rename it (a file name "
                  "is published as it is), and revoke the credential if it was ever shared")


def private_path_in(rel: str, data: bytes, private: tuple[str, ...]) -> str | None:
    """The first of the ``private`` absolute paths that the metadata file ``rel`` names (config, card, training
    side files; vocabularies are not searched), or None."""
    name = rel.rsplit("/", 1)[-1]
    if not private or name in VOCABULARY_FILES or not name.endswith((".json", ".yaml", ".yml", ".md")):
        return None
    text = data.decode("utf-8", "replace")
    for prefix in private:
        if re.search(re.escape(prefix) + r"(?=[/\\\"'`\s)]|$)", text):
            return prefix
    return None


def content_problem(rel: str, data: bytes, private: tuple[str, ...] = ()) -> str | None:
    """Why the bytes of the non-safetensors file ``rel`` may not be published (None: they may). ``private``: absolute
    paths of this machine that metadata files must not name."""
    name = rel.rsplit("/", 1)[-1]
    problem = secrets_problem(rel, data, in_bytes=scan_bytes(data))
    if problem is not None:
        return problem
    prefix = private_path_in(rel, data, private)
    if prefix is not None:
        return (f"{rel} names a local absolute path (under {prefix}): public files name data and models by name, "
                "relative path and hash; re-render the card (`hf-dumpembed card`) or rebuild/refit the folder with "
                "this version, or edit the file")
    if data.startswith(PICKLE_OR_ZIP):
        return f"{rel} is a pickle or zip archive (e.g. a torch.save file) whatever its name: publish safetensors only"
    if name.endswith(".png"):
        if not data.startswith(PNG_SIGNATURE):
            return f"{rel} is named .png but is not a PNG image"
        problem = png_problem(data)
        return None if problem is None else f"{rel} is not a well-formed PNG image ({problem}): save the plot again"
    if not name.endswith(TEXT_SUFFIXES):
        return None  # binary tokenizer models (tokenizer.model, spiece.model): scanned for secrets and magic only
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        return f"{rel} is not UTF-8 text (byte {error.start}): a {name.rsplit('.', 1)[-1]} file must be text"
    if name.endswith(".json"):
        try:
            json.loads(text)
        except ValueError as error:
            return f"{rel} is not valid JSON ({error})"
    elif name.endswith((".yaml", ".yml")):
        import yaml

        try:
            yaml.safe_load(text)
        except yaml.YAMLError as error:
            return f"{rel} is not valid YAML ({str(error).splitlines()[0]})"
    return None


def training_file_problem(rel: str) -> str | None:
    """``training/`` holds only the trainer's side files; anything else there is refused by name."""
    parts = rel.split("/")
    if parts[0] != "training":
        return None
    if len(parts) == 2 and parts[1] in TRAINING_SIDE_FILES:
        return None
    return (f"{rel} is not one of the training side files ({', '.join('training/' + n for n in TRAINING_SIDE_FILES)})"
            ": move it out of the folder")


def check_file(folder: Path, rel: str, identity: Identity, private: tuple[str, ...] = ()) -> str | None:
    """Open ``rel`` safely and check its name and content; a problem when it changed since the scan or is refused
    (what looks like a credential in it is masked, the name included)."""
    try:
        fd = open_inside(folder.resolve(), rel)
    except OSError as error:
        return redact(f"{rel} could not be opened without following links ({error.strerror or error})")
    problems = [path_problem(rel)]
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if Identity.of(info) != identity:
            problems.append(f"{rel} changed while the folder was being checked: run push again")
        elif rel.endswith(".safetensors"):
            problems += safetensors_file_problems(rel, handle, info.st_size)
        elif info.st_size > MAX_TEXT_SCAN_BYTES:
            problems.append(f"{rel} is {info.st_size:,} bytes: too large for a non-weights file of a model folder")
        else:
            problems.append(content_problem(rel, handle.read(), private))
    found = [problem for problem in problems if problem is not None]
    return redact("; ".join(found)) if found else None


def _safetensors_header(handle: BinaryIO) -> tuple[int, dict]:
    """(offset of the tensor data, header) of the safetensors file ``handle``, once safetensors has read it (a JSON
    object of at most 100 MB)."""
    handle.seek(0)
    (length,) = struct.unpack("<Q", handle.read(8))
    return 8 + length, json.loads(handle.read(length).decode("utf-8"))


def safetensors_file_problems(rel: str, handle: BinaryIO, size: int) -> list[str | None]:
    """The problems of the safetensors file ``handle``: its header, credentials in its metadata (detect-secrets, by
    line) and in any of its bytes (the byte scan, by offset, with the tensor and row holding it)."""
    problem = safetensors_problem(handle, size)
    if problem is not None:
        return [f"{rel}: {problem}"]
    data_start, header = _safetensors_header(handle)
    metadata = header.pop("__metadata__", None) or {}
    lines = "".join(f"{key}: {value}\n" for key, value in metadata.items())
    handle.seek(0)
    found = [ByteFinding(f.kind, f.offset, f.where + tensor_at(header, data_start, f.offset))
             for f in scan_stream(handle, size)]
    in_bytes = None if not found else (
        f"{rel} contains what looks like a credential in its raw bytes ({_listing([f.describe() for f in found])}): "
        "never publish credentials; save the weights again from a clean model (a tensor's bytes can hold any text as "
        "finite numbers); the byte scan found it")
    return [secrets_problem(rel, lines.encode("utf-8"), where="'s header metadata (one key: value a line)",
                            scan_name="metadata.yaml"), in_bytes]


def tensor_at(header: dict, data_start: int, offset: int) -> str:
    """Where byte ``offset`` of a safetensors file lies: `` in the header``, or the tensor and its row."""
    if offset < data_start:
        return " in the header"
    position = offset - data_start
    for name, entry in header.items():
        start, end = entry["data_offsets"]
        if start <= position < end:
            shape = entry["shape"]
            row_bytes = SAFETENSORS_DTYPES[entry["dtype"]]
            for dim in shape[1:]:
                row_bytes *= dim
            row = f" row {(position - start) // row_bytes}" if len(shape) > 1 and row_bytes else ""
            return f" in tensor {name!r}{row}"
    return ""


def stage_verified(folder: Path, files: dict[str, Identity], staging: Path, link_weights: bool) -> None:
    """Copy exactly the verified ``files`` into ``staging``, each PNG with its image chunks only (`stripped_png`);
    hard-link safetensors when ``link_weights`` (a temporary staging folder, deleted after the upload) and the
    filesystem allows (a kept staging folder gets copies: it never shares an inode with the model folder). Refuses
    (OSError) a file that is no longer the one that was verified."""
    root = folder.resolve()
    for rel, identity in files.items():
        target = staging / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        fd = open_inside(root, rel)
        with os.fdopen(fd, "rb") as source:
            if Identity.of(os.fstat(source.fileno())) != identity:
                raise OSError(f"{rel} changed after it was checked; nothing was uploaded, run push again.")
            if link_weights and rel.endswith(".safetensors"):
                try:
                    os.link(root / rel, target, follow_symlinks=False)
                    if Identity.of(target.lstat()) == identity:
                        continue
                    target.unlink()
                except OSError:
                    pass
            if rel.endswith(".png"):
                target.write_bytes(stripped_png(rel, source.read()))
                continue
            with target.open("wb") as out:
                shutil.copyfileobj(source, out, 1 << 20)


def plot_problems(folder: Path, files: dict[str, Identity]) -> list[str]:
    """The problems of the PNG ``files`` of ``folder`` (credentials in any of their bytes or payloads, chunks that do
    not hold together), checked in the folder itself: every staged copy holds them stripped (`stage_verified`)."""
    found = [check_file(folder, rel, identity) for rel, identity in sorted(files.items()) if rel.endswith(".png")]
    return [problem for problem in found if problem is not None]


def png_problem(data: bytes) -> str | None:
    """Why the PNG ``data`` (its signature checked) is not well formed, or None: every chunk fits the file and has
    its CRC, IHDR comes first, there is image data and an IEND chunk (what `stripped_png` keeps must decode)."""
    chunks = list(png_chunks(data))
    if not chunks or chunks[0].kind != b"IHDR" or len(chunks[0].body) != 13:
        return "it does not start with a 13-byte IHDR chunk"
    broken = next((chunk for chunk in chunks if not chunk.crc_ok()), None)
    if broken is not None:
        return f"the {broken.kind.decode('latin-1')!r} chunk at byte {broken.offset} has a wrong CRC"
    if chunks[-1].kind != b"IEND":
        return f"a chunk runs past the end of the file after byte {chunks[-1].end}, before any IEND chunk"
    if not any(chunk.kind == b"IDAT" for chunk in chunks):
        return "it has no image data (IDAT chunk)"
    return None


def stripped_png(rel: str, data: bytes) -> bytes:
    """The well-formed PNG ``data`` with its image chunks only (IHDR, PLTE, IDAT, IEND, and tRNS where its size
    fits the colour type), each copied with its CRC, and nothing after IEND: a plot carries no hidden text or
    payload. OSError when ``data`` is not a well-formed PNG (checked before staging)."""
    problem = png_problem(data) if data.startswith(PNG_SIGNATURE) else "no PNG signature"
    if problem is not None:
        raise OSError(redact(f"{rel} is not a well-formed PNG image ({problem}); nothing was uploaded."))
    chunks = list(png_chunks(data))
    keep = [chunk.kind in PNG_IMAGE_CHUNKS and _fits(chunk, chunks) for chunk in chunks]
    kept = [chunk for chunk, wanted in zip(chunks, keep, strict=True) if wanted]
    dropped = sorted({chunk.kind.decode("latin-1") for chunk, wanted in zip(chunks, keep, strict=True) if not wanted})
    trailing = len(data) - chunks[-1].end
    if dropped or trailing:
        logger.info("%s is staged with its image chunks only (left out: %s)", redact(rel),
                    ", ".join(dropped + ([f"{trailing} bytes after IEND"] if trailing else [])))
    return PNG_SIGNATURE + b"".join(data[chunk.offset:chunk.end] for chunk in kept)


def _fits(chunk: PngChunk, chunks: list[PngChunk]) -> bool:
    """Whether ``chunk`` (an image chunk) is kept: a tRNS chunk only where its size fits the colour type (2 bytes
    for grey, 6 for RGB, at most one per palette entry); every other image chunk always."""
    if chunk.kind != b"tRNS":
        return True
    colour = chunks[0].body[9]
    palette = sum(len(c.body) // 3 for c in chunks if c.kind == b"PLTE")
    return {0: len(chunk.body) == 2, 2: len(chunk.body) == 6, 3: 0 < len(chunk.body) <= palette}.get(colour, False)
