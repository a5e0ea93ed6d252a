"""Push a checked model folder to the Hugging Face Hub: create the repo (and branch), commit exactly the staged files.

Order of work: token, then every check of `push_checks.check_folder` (fresh-process load included) and the staging of
the files, and only then the first network request. The token is never printed or written anywhere.
"""

from __future__ import annotations

import logging
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .._utils.atomic import remove_empty
from .._utils.hashing import sha256_file
from .push_checks import FolderReport, PublishRefused, check_folder
from .staging import stage_for_repo
from .staging_safety import plot_problems, scan_folder

logger = logging.getLogger(__name__)
_REVISION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]*$")

KEEP_ON_HUB = (".gitattributes",)  # created by the Hub with the repo; never deleted by a push


@dataclass(frozen=True)
class StagedFile:
    """One file of the upload: its path in the repo, size in bytes and sha256."""

    path: str
    size: int
    sha256: str


@dataclass
class PushResult:
    """What a push (or a dry run) did."""

    repo_id: str
    branch: str
    files: list[StagedFile]
    report: FolderReport
    staging_dir: Path | None = None
    commit_sha: str | None = None
    commit_url: str | None = None
    deleted: tuple[str, ...] = ()

    def listing(self) -> str:
        """The staged files as a table: size, sha256, path."""
        lines = [f"{f.size:>12,}  {f.sha256}  {f.path}" for f in self.files]
        lines.append(f"{sum(f.size for f in self.files):>12,}  bytes in {len(self.files)} files")
        return "\n".join(lines)


def resolve_token() -> str:
    """The token from HF_TOKEN or the saved login (``hf auth login``); a clear error when there is none or the Hub is
    offline (HF_HUB_OFFLINE)."""
    from huggingface_hub import constants, get_token

    if constants.is_offline_mode():
        raise ValueError("HF_HUB_OFFLINE is set, so nothing can be uploaded; unset it (and TRANSFORMERS_OFFLINE) "
                         "to push, or use --dry-run to stage and list the files.")
    token = get_token()
    if not token:
        raise ValueError(
            "No Hugging Face token found: set the HF_TOKEN environment variable to a token with write access, or "
            "log in once with `hf auth login`. (--dry-run needs no token.)"
        )
    return token


def check_repo_id(repo_id: str, what: str = "REPO_ID") -> str:
    """``repo_id`` when it is a Hub repo id ``owner/name`` (huggingface_hub's rules: letters, digits, ``-``, ``_``,
    ``.``, at most 96 characters); a ValueError naming ``what`` otherwise. `push` and `card --model-id` both use it."""
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    try:
        validate_repo_id(repo_id)
    except HFValidationError as error:
        raise ValueError(f"{what} {repo_id!r} is not a valid Hub repo id: {error}") from None
    if "/" not in repo_id:
        raise ValueError(f"{what} must be 'owner/name' (your user or organisation, then the model name); got "
                         f"{repo_id!r}.")
    return repo_id


def check_revision(revision: str, what: str = "--revision") -> str:
    """``revision`` when it is a commit sha or a branch / tag name (letters, digits, ``.``, ``_``, ``/``, ``-``; no
    ``..``), as the card's snippets paste it; a ValueError naming ``what`` otherwise."""
    if not _REVISION.match(revision) or ".." in revision or len(revision) > 256:
        raise ValueError(f"{what} {revision!r} is not a commit sha or a branch / tag name (letters, digits, '.', '_', "
                         "'/', '-'): give the commit sha `push` printed.")
    return revision


def validate_target(repo_id: str, branch: str | None) -> None:
    """Refuse a repo id that is not ``owner/name`` (the card command checks ``--model-id`` the same way) and a
    malformed branch."""
    check_repo_id(repo_id)
    if branch is not None and (not branch or branch.startswith(("-", "/")) or " " in branch or ".." in branch):
        raise ValueError(f"--branch {branch!r} is not a valid branch name.")


def make_stage_dir(staging: Path, folder: Path) -> tuple[Path, list[Path]]:
    """Check and create the ``--stage-dir``: empty or new, and neither inside nor around the model folder (which push
    never modifies); returns it and the folders created, innermost first."""
    stage, model = staging.expanduser().resolve(), folder.expanduser().resolve()
    if stage == model or model in stage.parents:
        raise ValueError(f"--stage-dir {staging} is inside the model folder {folder} (or is it), which push never "
                         "modifies: choose a staging folder elsewhere.")
    if stage in model.parents:
        raise ValueError(f"--stage-dir {staging} contains the model folder {folder}: choose an empty staging folder "
                         "elsewhere.")
    if staging.exists() and not staging.is_dir():
        raise FileExistsError(f"--stage-dir {staging} is a file; give an empty or new folder.")
    if staging.exists() and any(staging.iterdir()):
        raise FileExistsError(f"--stage-dir {staging} is not empty; give an empty or new folder.")
    absolute = staging.expanduser().absolute()
    created = [p for p in [absolute, *absolute.parents] if not p.exists()]
    staging.mkdir(parents=True, exist_ok=True)
    return staging, created


def undo_stage_dir(staging: Path, created: list[Path]) -> None:
    """After a failed push: remove the ``--stage-dir`` and its parents when this push created them, else empty it
    again (it was empty before)."""
    if created:
        shutil.rmtree(staging, ignore_errors=True)
        remove_empty(created[1:])
        return
    for item in staging.iterdir():
        if item.is_dir() and not item.is_symlink():
            shutil.rmtree(item, ignore_errors=True)
        else:
            item.unlink(missing_ok=True)


def checked_copy(folder: Path, copy: Path, staging: Path, repo_id: str, *, source: str | Path | None,
                 results_dir: str | Path | None, results_model: str | None, link_weights: bool,
                 trust_remote_code: bool) -> tuple[FolderReport, list[str]]:
    """Scan ``folder``, copy it to ``copy`` (same name as ``folder``: the card finds results filed under it) with its
    card rendered for ``repo_id``, run every check on the copy and stage its files into ``staging``. Returns the
    passing report and the staged files; PublishRefused when a check fails."""
    source_scan = scan_folder(folder)  # links out, special files: refused here, never silently dropped
    # The copy holds each plot stripped to its image chunks: what its other chunks hide is found here.
    problems = source_scan.problems + plot_problems(folder, source_scan.files)
    if problems:
        raise PublishRefused(FolderReport(folder=folder, problems=problems))
    copy.mkdir()
    card = stage_for_repo(folder, copy, repo_id, source=source, results_dir=results_dir, results_model=results_model)
    report, files = check_folder(copy, source=source, staging=staging, repo_id=repo_id, link_weights=link_weights,
                                 trust_remote_code=trust_remote_code)
    report.folder = folder
    report.passed.insert(0, card)
    if not report.ok:
        raise PublishRefused(report)
    return report, files


def push_folder(
    folder: str | Path,
    repo_id: str,
    *,
    private: bool = False,
    branch: str | None = None,
    commit_message: str | None = None,
    dry_run: bool = False,
    source: str | Path | None = None,
    staging_dir: str | Path | None = None,
    endpoint: str | None = None,
    results_dir: str | Path | None = None,
    results_model: str | None = None,
    trust_remote_code: bool = False,
) -> PushResult:
    """Check ``folder``, stage it, and (unless ``dry_run``) upload it as one commit to ``repo_id``.

    Args:
        folder: a DumpEmbed model folder, or its stock export (then ``source`` may name the DumpEmbed folder
            whose vectors it must reproduce).
        repo_id: ``owner/name`` on the Hub; created (``exist_ok``) when missing.
        private: create the repo private (ignored when it exists).
        branch: commit to this branch (created from main when missing) instead of main.
        commit_message: the commit summary.
        dry_run: stop after staging: no token, no network; the staging folder is kept for inspection.
        staging_dir: where to stage (must be empty or absent; a failed push removes it when it created it, else
            empties it again); default a temporary folder.
        endpoint: the Hub URL (default: huggingface_hub's, i.e. ``HF_ENDPOINT``).
        results_dir, results_model: mteb results for the card's evaluation table, when the card is rendered.
        trust_remote_code: publish code that is not hf_dumpembed's own (refused by default; run only in the
            fresh check process).

    The folder is first copied and its card rendered there for ``repo_id`` when it is missing or loads another id
    (``folder`` itself is never modified); every check then runs on that copy.

    Raises:
        PublishRefused: a check failed (nothing was sent).
        ValueError: no token, offline mode, or a bad repo id / branch.
    """
    validate_target(repo_id, branch)
    token = None if dry_run else resolve_token()  # before the (slow) checks: fail fast
    created: list[Path] = []  # the --stage-dir folders this push made (innermost first): removed when it fails
    if staging_dir is not None:
        staging, created = make_stage_dir(Path(staging_dir), Path(folder))
    else:
        staging = Path(tempfile.mkdtemp(prefix="hf-dumpembed-push-"))
    keep_staging = False
    copy_root = Path(tempfile.mkdtemp(prefix="hf-dumpembed-copy-"))
    try:
        report, files = checked_copy(Path(folder), copy_root / Path(folder).resolve().name, staging, repo_id,
                                     source=source, results_dir=results_dir, results_model=results_model,
                                     link_weights=staging_dir is None and not dry_run,  # a kept staging gets copies
                                     trust_remote_code=trust_remote_code)
        staged = [StagedFile(name, (staging / name).stat().st_size, sha256_file(staging / name)) for name in files]
        result = PushResult(repo_id=repo_id, branch=branch or "main", files=staged, report=report, staging_dir=staging)
        if dry_run:
            keep_staging = True  # the user inspects exactly what would be uploaded
            return result
        upload(result, staging, token, private=private, branch=branch, endpoint=endpoint,
               commit_message=commit_message or f"Upload {Path(folder).name} with hf-dumpembed")
        result.staging_dir = None
        return result
    except BaseException:
        if staging_dir is not None:
            undo_stage_dir(staging, created)
        raise
    finally:
        shutil.rmtree(copy_root, ignore_errors=True)
        if staging_dir is None and not keep_staging:
            shutil.rmtree(staging, ignore_errors=True)


def upload(result: PushResult, staging: Path, token: str, *, private: bool, branch: str | None,
           endpoint: str | None, commit_message: str) -> None:
    """Create the repo (and branch) and commit exactly ``result.files``; stale files on the branch are deleted."""
    # Not upload_folder(delete_patterns="*"): it commits whatever the folder holds at call time and does not say
    # which files it deleted; explicit operations commit the verified list and report the deletions.
    from huggingface_hub import CommitOperationAdd, CommitOperationDelete, HfApi

    api = HfApi(endpoint=endpoint, token=token, library_name="hf_dumpembed")
    api.create_repo(result.repo_id, private=private, exist_ok=True, repo_type="model")
    if branch:
        api.create_branch(result.repo_id, branch=branch, exist_ok=True, repo_type="model")
    on_hub = api.list_repo_files(result.repo_id, revision=branch, repo_type="model")
    keep = {f.path for f in result.files} | set(KEEP_ON_HUB)
    deleted = tuple(sorted(path for path in on_hub if path not in keep))
    operations = [CommitOperationDelete(path_in_repo=path) for path in deleted]
    operations += [CommitOperationAdd(path_in_repo=f.path, path_or_fileobj=str(staging / f.path)) for f in result.files]
    logger.info("Committing %d files (%d stale files deleted) to %s@%s", len(result.files), len(deleted),
                result.repo_id, result.branch)
    info = api.create_commit(result.repo_id, operations, commit_message=commit_message, revision=branch,
                             repo_type="model")
    result.commit_sha, result.commit_url, result.deleted = info.oid, info.commit_url, deleted
