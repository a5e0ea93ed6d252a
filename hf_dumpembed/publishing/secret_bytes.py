"""Credentials in the raw bytes of any file and in file names: the byte scan `push` runs on every staged file.

detect-secrets scans text line by line; a token can also sit in the bytes of a tensor (an unused embedding row
holds any 4-byte pattern as a finite float), in a PNG text chunk, in any binary file, or be the name of a file.
Here every file is searched as bytes, in chunks of `CHUNK_BYTES` with `OVERLAP_BYTES` carried over so that a token
across a chunk boundary is found, with one compiled bytes regex per token format (`byte_rules`: Hugging Face, AWS,
GitHub and OpenAI keys, JSON Web Tokens, private-key headers, basic-auth URLs; detect-secrets' own regexes where it
exposes them): the time is linear in the size and the memory bounded. Each format is also found written as UTF-16,
LE or BE (`_utf16_findings`: about a fifth more time on random float weights).

Inside a PNG the hidden payloads are decoded and scanned too (`png_payloads`): the text of its zTXt/iTXt chunks
inflated, zlib or gzip streams in any other ancillary chunk and after its IEND chunk, and base64 in all of these. A
plot is staged with its image chunks only (``staging_safety.stripped_png``), so this is what tells the author a
credential was there, not what keeps it from being published.

A finding holds the kind and the byte offset, never the secret. `redact` masks what looks like a secret in a
text (a file name in a report): ``plots/hf_…(masked).png``.
"""

from __future__ import annotations

import binascii
import io
import re
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from itertools import chain
from typing import BinaryIO, NamedTuple

CHUNK_BYTES = 8 * 2**20
# Longer than any match of a bounded rule (the longest, a JWT header, is 8 KiB): a match that crosses a chunk
# boundary lies whole in the next window. A rule with an unbounded tail (``hf_`` + 30 or more) matches the part
# of a token before the boundary already.
OVERLAP_BYTES = 64 * 2**10
MAX_FINDINGS = 11  # a report lists 10 and says when there are more
MASK = "…(masked)"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
MAX_PNG_TEXT_BYTES = 16 * 2**20  # a compressed PNG payload is inflated (and searched) up to this (no zip bomb)
MAX_INFLATE_TRIES = 256  # zlib/gzip headers tried per PNG payload (a plot is staged without them anyway)
# The chunks a PNG is staged with (tRNS: the alpha of palette, grey and RGB images, when its size fits).
PNG_IMAGE_CHUNKS = (b"IHDR", b"PLTE", b"tRNS", b"IDAT", b"IEND")
PNG_TEXT_CHUNKS = (b"tEXt", b"zTXt", b"iTXt")
# The shortest match of any rule is 7 characters (``://b:c@``): as UTF-16, 7 characters in a row each with its NUL.
MIN_UTF16_CHARS = 7
UTF16_GAP = 64 * 2**10  # runs of NULs nearer than this (in one half) are searched as one span
_BASE64_RUN = re.compile(rb"[A-Za-z0-9+/_-]{12,}={0,2}")
_URLSAFE_TO_STANDARD = bytes.maketrans(b"-_", b"+/")
# Where a zlib (CM 8) or gzip stream may start: checked further by `_compressed_start`.
_COMPRESSED_HEAD = re.compile(rb"(?=[\x08\x18\x28\x38\x48\x58\x68\x78]|\x1f\x8b)")
_BASE64URL = rb"[A-Za-z0-9_=-]"
_BASE64URL_RUN = re.compile(_BASE64URL + rb"{4,}")
MAX_JWT_HEADER = 8192


@dataclass(frozen=True)
class ByteRule:
    """One token format: its kind (as detect-secrets names it), a bytes regex, how many leading characters of a
    finding name the format rather than the secret (kept by `redact`), whether it runs on lower-cased bytes, and
    ``locate(buffer, match, floor)``: where a match's finding starts (not before ``floor``; default: where the match
    starts), or None when it is not one."""

    kind: str
    pattern: re.Pattern[bytes]
    shown: int
    lowered: bool = False
    locate: Callable[[bytes | bytearray, re.Match[bytes], int], int | None] | None = None


@dataclass(frozen=True)
class ByteFinding:
    """A credential found at byte ``offset`` (``where``: inside what, e.g. `` in tensor 'x' row 5``)."""

    kind: str
    offset: int
    where: str = ""

    def describe(self) -> str:
        return f"byte {self.offset}{self.where}: {self.kind}"


def as_bytes(pattern: re.Pattern[str], lowered: bool = False) -> re.Pattern[bytes]:
    """detect-secrets' str ``pattern`` as a bytes regex (ASCII classes); ``lowered``: without IGNORECASE, for
    lower-cased bytes (its literals are lower case)."""
    flags = pattern.flags & ~re.UNICODE
    if lowered:
        flags &= ~re.IGNORECASE
    return re.compile(pattern.pattern.encode("ascii"), flags)


def any_of(*patterns: re.Pattern[bytes]) -> re.Pattern[bytes]:
    """One regex matching any of ``patterns``, which start with the same literal: one pass over the data, as fast
    as one of them (a regex whose alternatives start differently is searched byte by byte, 50 times slower)."""
    return re.compile(b"|".join(b"(?:" + pattern.pattern + b")" for pattern in patterns))


def _jwt_start(buffer: bytes | bytearray, match: re.Match[bytes], floor: int) -> int | None:
    """Where the JWT starts whose header ends at the dot ``match`` starts with: the ``eyJ`` at most
    `MAX_JWT_HEADER` bytes back (not before ``floor``) from which a base64url run reaches the dot and decodes to
    JSON (``JwtTokenDetector.is_formally_valid``); None when there is none.

    Searched from the dot back rather than from ``eyJ`` on: each dot looks back over its own run only, so the
    time stays linear on any input (a regex from ``eyJ`` on scans up to the bound from every ``eyJ``)."""
    from detect_secrets.plugins.jwt import JwtTokenDetector

    dot = match.start()
    lowest, end = max(floor, dot - MAX_JWT_HEADER), dot
    for _ in range(4):  # the header may hold "eyJ" itself: a few candidates, nearest first
        start = buffer.rfind(b"eyJ", lowest, end)
        if start < 0 or _BASE64URL_RUN.fullmatch(buffer, start, dot) is None:
            return None  # no eyJ, or a byte that is not base64url between it and the dot (and before it)
        if JwtTokenDetector.is_formally_valid(bytes(buffer[start:dot]).decode("ascii")):
            return start
        end = start + 2
    return None


@lru_cache(maxsize=1)
def byte_rules() -> tuple[ByteRule, ...]:
    """The token formats of the byte scan (compiled once)."""
    from detect_secrets.plugins.aws import AWSKeyDetector
    from detect_secrets.plugins.basic_auth import RESERVED_CHARACTERS, SUB_DELIMITER_CHARACTERS, BasicAuthDetector
    from detect_secrets.plugins.github_token import GitHubTokenDetector
    from detect_secrets.plugins.jwt import JwtTokenDetector
    from detect_secrets.plugins.openai import OpenAIDetector
    from detect_secrets.plugins.private_key import PrivateKeyDetector

    from .secret_plugins import HF_TOKEN, HuggingFaceTokenDetector

    key_id, quoted_secret = AWSKeyDetector.denylist
    not_in_url = re.escape(RESERVED_CHARACTERS + SUB_DELIMITER_CHARACTERS).encode() + rb"\x00-\x20\x7f-\xff"
    return (
        ByteRule(HuggingFaceTokenDetector.secret_type, re.compile(HF_TOKEN.encode()), 3),
        ByteRule(AWSKeyDetector.secret_type, as_bytes(key_id), 4),
        # Lower-cased bytes without IGNORECASE: a regex with a literal prefix is searched about 25 times faster.
        ByteRule("AWS Secret Access Key", any_of(as_bytes(quoted_secret, lowered=True), re.compile(
            rb"aws[\w.-]{0,20}?secret[\w.-]{0,20}?[\"']?\s{0,4}[:=]\s{0,4}[\"']?[0-9a-z/+]{40}")), 3, lowered=True),
        # Two passes: joined to the stock regex (whose capturing group hides its prefix) it is searched byte by byte.
        ByteRule(GitHubTokenDetector.secret_type, as_bytes(GitHubTokenDetector.denylist[0]), 4),
        ByteRule(GitHubTokenDetector.secret_type, re.compile(rb"github_pat_[A-Za-z0-9_]{40,}"), 11),
        # Bounded (OpenAIDetector's has an unbounded run before a required part) and allowing _/- after T3BlbkFJ.
        ByteRule(OpenAIDetector.secret_type, re.compile(rb"sk-(?:(?:proj|svcacct|admin)-[A-Za-z0-9_-]{40,}"
                                                        rb"|[A-Za-z0-9_-]{20,400}T3BlbkFJ[A-Za-z0-9_-]{20,400})"), 3),
        # The dot between header and payload ("ey": base64url of '{"' or '{ '); the header is found back from it.
        ByteRule(JwtTokenDetector.secret_type, re.compile(rb"\.ey" + _BASE64URL + rb"+(?:\." + _BASE64URL + rb"+)?"), 3,
                 locate=_jwt_start),
        # Every header PrivateKeyDetector knows ("BEGIN RSA PRIVATE KEY", ...) and any other key type.
        ByteRule(PrivateKeyDetector.secret_type, re.compile(rb"BEGIN[ A-Z0-9]{0,40}PRIVATE KEY"), 5),
        ByteRule(PrivateKeyDetector.secret_type, re.compile(rb"PuTTY-User-Key-File-[0-9]"), 5),
        # scheme://user:password@host, searched from its literal "://" (the lookbehind checks the scheme's end); user
        # and password printable ASCII (BasicAuthDetector's any non-delimiter byte would match random weights).
        ByteRule(BasicAuthDetector.secret_type,
                 re.compile(rb"://(?<=[A-Za-z0-9+.-]://)[^" + not_in_url + rb"]{1,256}:[^" + not_in_url
                            + rb"]{1,256}@(?=[A-Za-z0-9\[])"), 3),
    )


def _window_findings(buffer: bytes | bytearray, end: int, base: int) -> Iterator[tuple[ByteRule, int, int]]:
    """(rule, absolute start, absolute end) of each match in ``buffer[:end]``, whose first byte is at ``base``."""
    lowered = None
    for rule in byte_rules():
        if rule.lowered and lowered is None:
            lowered = (buffer if end == len(buffer) else buffer[:end]).lower()
        floor = 0
        for match in rule.pattern.finditer(lowered if rule.lowered else buffer, 0, end):
            start = match.start() if rule.locate is None else rule.locate(buffer, match, floor)
            floor = match.end()
            if start is not None:
                yield rule, base + start, base + match.end()


def _utf16_findings(buffer: bytes | bytearray, end: int, base: int) -> Iterator[tuple[ByteRule, int]]:
    """(rule, absolute offset of its first character) of each token written as UTF-16 in ``buffer[:end]`` (first
    byte at ``base``): where the odd (even) bytes hold a run of NULs, the rules run on the runs of at least
    `MIN_UTF16_CHARS` even (odd) bytes that are not NUL and have a NUL right after them (LE) or before them (BE),
    every other byte set to NUL (no token holds one). A match inside a longer text reads as both."""
    import numpy as np

    data = np.frombuffer(buffer, dtype=np.uint8, count=end)
    for parity in (0, 1):
        if b"\x00" * MIN_UTF16_CHARS not in buffer[1 - parity:end:2]:
            continue  # no text there (the usual case for weights: a string search, no array work)
        chars, nuls = data[parity::2], data[1 - parity::2]
        for shift in (parity, parity - 1):  # chars[i]'s NUL is nuls[i + shift]: LE, then BE
            first = max(-shift, 0)
            last = min(len(chars), len(nuls) - shift)
            text = (chars[first:last] != 0) & (nuls[first + shift:last + shift] == 0)
            for low, high in _true_spans(text):
                region = np.where(text[low:high], chars[first + low:first + high], 0).tobytes()
                for rule, start, _ in _window_findings(region, len(region), 0):
                    yield rule, base + 2 * (first + low + start) + parity


def _true_spans(flags) -> list[tuple[int, int]]:
    """[low, high) spans covering the runs of at least `MIN_UTF16_CHARS` True values of the boolean array
    ``flags``; runs less than `UTF16_GAP` apart share a span (a span costs one pass of the rules)."""
    import numpy as np

    if len(flags) < MIN_UTF16_CHARS:
        return []
    bounds = np.concatenate(([0], np.flatnonzero(flags[1:] != flags[:-1]) + 1, [len(flags)]))
    starts, ends = bounds[:-1], bounds[1:]  # the runs of equal values
    keep = flags[starts] & (ends - starts >= MIN_UTF16_CHARS)
    starts, ends = starts[keep], ends[keep]
    if not len(starts):
        return []
    breaks = np.flatnonzero(starts[1:] - ends[:-1] >= UTF16_GAP)
    lows = np.concatenate((starts[:1], starts[breaks + 1]))
    highs = np.concatenate((ends[breaks], ends[-1:]))
    return list(zip(lows.tolist(), highs.tolist(), strict=True))


def scan_stream(handle: BinaryIO, size: int | None = None, chunk_bytes: int | None = None,
                overlap: int | None = None, limit: int = MAX_FINDINGS) -> list[ByteFinding]:
    """Every credential in the bytes ``handle`` reads, as ASCII or as UTF-16 (up to ``limit``, by offset), read
    ``chunk_bytes`` (default `CHUNK_BYTES`, or ``size`` when the stream is known to be smaller) at a time, with the
    last ``overlap`` bytes of each window searched again with the next chunk."""
    chunk_bytes = chunk_bytes or min(CHUNK_BYTES, max(size or CHUNK_BYTES, 1))
    overlap = OVERLAP_BYTES if overlap is None else overlap
    buffer = bytearray(overlap + chunk_bytes)
    found: dict[tuple[str, int], ByteFinding] = {}
    base, kept = 0, 0
    with memoryview(buffer) as view:
        while len(found) < limit:
            read = handle.readinto(view[kept:kept + chunk_bytes])
            if not read:
                break
            end = kept + read
            ascii_text = ((rule, start, "") for rule, start, _ in _window_findings(buffer, end, base))
            utf16 = ((rule, start, " as UTF-16 text") for rule, start in _utf16_findings(buffer, end, base))
            for rule, start, where in chain(ascii_text, utf16):
                found.setdefault((rule.kind, start), ByteFinding(rule.kind, start, where))
                if len(found) >= limit:
                    break
            kept = min(overlap, end)
            view[:kept] = bytes(view[end - kept:end])
            base += end - kept
    return sorted(found.values(), key=lambda finding: finding.offset)[:limit]


def scan_bytes(data: bytes) -> list[ByteFinding]:
    """Every credential in ``data`` (in chunks, as a file), plus, in a PNG, those in its decoded payloads
    (`png_payloads`), each reported at the payload's offset."""
    found = _scan_data(data)
    if data.startswith(PNG_SIGNATURE):
        found += png_payload_findings(data)
    return found[:MAX_FINDINGS]


class PngChunk(NamedTuple):
    """One chunk of a PNG: the offset of its length field, its type, its data and its stored CRC."""

    offset: int
    kind: bytes
    body: bytes
    crc: int

    @property
    def end(self) -> int:
        return self.offset + 12 + len(self.body)

    def crc_ok(self) -> bool:
        return zlib.crc32(self.kind + self.body) & 0xFFFFFFFF == self.crc


def png_chunks(data: bytes) -> Iterator[PngChunk]:
    """The chunks of the PNG ``data`` in order, up to and including IEND; stops at a chunk that runs past the end."""
    position = len(PNG_SIGNATURE)
    while position + 12 <= len(data):
        length = int.from_bytes(data[position:position + 4], "big")
        if position + 12 + length > len(data):
            return
        body_end = position + 8 + length
        chunk = PngChunk(position, data[position + 4:position + 8], data[position + 8:body_end],
                         int.from_bytes(data[body_end:body_end + 4], "big"))
        yield chunk
        if chunk.kind == b"IEND":
            return
        position = chunk.end


class PngPayload(NamedTuple):
    """Bytes a PNG holds besides its image: ``what`` they are (``the tEXt chunk``), where (its offset in the file),
    and whether they are the file's own bytes (``raw``: the byte scan searched them already)."""

    offset: int
    what: str
    data: bytes
    raw: bool


def png_payloads(data: bytes) -> Iterator[PngPayload]:
    """The text of each text chunk (inflated when compressed), the inflated zlib/gzip streams of every other
    ancillary chunk, and the data after IEND (raw and its inflated streams) of the PNG ``data``."""
    end = len(PNG_SIGNATURE)
    for chunk in png_chunks(data):
        end = chunk.end
        kind = chunk.kind.decode("latin-1")
        if chunk.kind in PNG_TEXT_CHUNKS:
            text = _inflated_text(chunk.kind, chunk.body) if chunk.kind != b"tEXt" else None
            if text:
                yield PngPayload(chunk.offset, f"the compressed {kind} chunk", text, raw=False)
            else:
                yield PngPayload(chunk.offset, f"the {kind} chunk", chunk.body, raw=True)
        elif chunk.kind not in PNG_IMAGE_CHUNKS:
            yield from _compressed_payloads(chunk.body, chunk.offset + 8, f"the {kind} chunk")
    if end < len(data):
        trailing = data[end:]
        yield PngPayload(end, "the data after the IEND chunk", trailing, raw=True)
        yield from _compressed_payloads(trailing, end, "the data after the IEND chunk")


def _compressed_payloads(blob: bytes, offset: int, what: str) -> Iterator[PngPayload]:
    """Each zlib or gzip stream in ``blob`` (found by its header, at most `MAX_INFLATE_TRIES` tried in its first
    `MAX_PNG_TEXT_BYTES`), inflated up to `MAX_PNG_TEXT_BYTES`; ``offset``: where ``blob`` lies in the file."""
    tries, after = 0, 0
    with memoryview(blob) as view:
        for head in _COMPRESSED_HEAD.finditer(blob, 0, MAX_PNG_TEXT_BYTES):
            start = head.start()
            if start < after or not _compressed_start(blob[start:start + 3]):
                continue
            tries += 1
            if tries > MAX_INFLATE_TRIES:
                return
            inflater = zlib.decompressobj(32 + zlib.MAX_WBITS)  # zlib or gzip, by the header
            try:
                text = inflater.decompress(view[start:], MAX_PNG_TEXT_BYTES)
            except zlib.error:
                continue
            if inflater.eof:
                after = len(blob) - len(inflater.unused_data)
            if text:
                yield PngPayload(offset + start, f"a zlib stream in {what}", text, raw=False)


def _compressed_start(head: bytes) -> bool:
    """Whether ``head`` opens a gzip stream or a zlib stream (deflate, window up to 32 KiB, no preset
    dictionary, header check)."""
    if head[:3] == b"\x1f\x8b\x08":
        return True
    return (len(head) >= 2 and head[0] & 0x0F == 8 and head[0] >> 4 <= 7 and not head[1] & 0x20
            and int.from_bytes(head[:2], "big") % 31 == 0)


def decoded_base64(text: bytes) -> bytes:
    """The decoded bytes of every base64 (standard or URL-safe) run in ``text``, one a line, whitespace removed
    first (wrapped lines); each run decoded from each of its first four characters (the encoded secret may start
    anywhere in it)."""
    decoded = []
    for run in _BASE64_RUN.finditer(re.sub(rb"\s+", b"", text)):
        standard = run.group().translate(_URLSAFE_TO_STANDARD).rstrip(b"=")
        for shift in range(4):
            body = standard[shift:]
            body = body[:-1] if len(body) % 4 == 1 else body  # a lone last character holds no byte
            try:
                decoded.append(binascii.a2b_base64(body + b"=" * (-len(body) % 4)))
            except binascii.Error:
                continue
    return b"\n".join(decoded)


def png_payload_findings(data: bytes) -> list[ByteFinding]:
    """The credentials in the payloads of the PNG ``data`` (inflated, and base64 decoded), each at its payload's
    offset: ``byte 57 in base64 in the tEXt chunk there: Hugging Face Token``."""
    found: dict[ByteFinding, None] = {}
    for payload in png_payloads(data):
        decodings = [("", payload.data)] if not payload.raw else []
        for how, decoded in [*decodings, ("base64 in ", decoded_base64(payload.data))]:
            found.update(dict.fromkeys(ByteFinding(f.kind, payload.offset, f" in {how}{payload.what} there")
                                       for f in _scan_data(decoded)))
        if len(found) >= MAX_FINDINGS:
            break
    return list(found)[:MAX_FINDINGS]


def _scan_data(data: bytes) -> list[ByteFinding]:
    """`scan_stream` of the bytes ``data`` (windows of its size, up to `CHUNK_BYTES`)."""
    return scan_stream(io.BytesIO(data), len(data)) if data else []


def _inflated_text(kind: bytes, body: bytes) -> bytes | None:
    """The text of a zTXt chunk, or of an iTXt chunk with its compression flag set; None when there is none."""
    keyword_end = body.find(b"\x00")
    if keyword_end < 0:
        return None
    if kind == b"zTXt":
        compressed = body[keyword_end + 2:]
    else:
        if body[keyword_end + 1:keyword_end + 2] != b"\x01":
            return None  # uncompressed iTXt: its text is in the raw bytes
        rest = body[keyword_end + 3:]
        parts = rest.split(b"\x00", 2)  # language tag, translated keyword, text
        if len(parts) < 3:
            return None
        compressed = parts[2]
    try:
        return zlib.decompressobj().decompress(compressed, MAX_PNG_TEXT_BYTES)
    except zlib.error:
        return None


def _spans(raw: bytes) -> list[tuple[ByteRule, int, int]]:
    return sorted(_window_findings(raw, len(raw), 0), key=lambda item: item[1])


def path_findings(rel: str) -> list[str]:
    """The kinds of credential in the relative path ``rel`` (each component and the whole path), in order."""
    kinds: list[str] = []
    for part in [rel, *rel.split("/")]:
        kinds += [rule.kind for rule, _, _ in _spans(part.encode("utf-8", "surrogateescape"))]
    return list(dict.fromkeys(kinds))


def redact(text: str) -> str:
    """``text`` with what looks like a credential masked (its format's prefix kept): ``plots/hf_…(masked).png``."""
    raw = text.encode("utf-8", "surrogateescape")
    spans, part_start = _spans(raw), 0
    for part in raw.split(b"/"):  # and each component on its own
        spans += [(rule, part_start + start, part_start + end) for rule, start, end in _spans(part)]
        part_start += len(part) + 1
    if not spans:
        return text
    out, position = b"", 0
    for rule, start, end in sorted(spans, key=lambda item: item[1]):
        if start >= position:  # a new span (one overlapping the last is masked with it)
            out += raw[position:start + rule.shown] + MASK.encode("utf-8")
        position = max(position, end)
    return (out + raw[position:]).decode("utf-8", "replace")
