"""``hf-dumpembed push``: check a model folder as users receive it, then upload it to the Hugging Face Hub."""

from __future__ import annotations

import argparse

from .._utils.console import say
from . import add_command, add_trust_flag

DESCRIPTION = """\
Publish MODEL (a DumpEmbed folder, or its stock export from `hf-dumpembed export-st`) to the Hub as REPO_ID.

Before any network request the folder is checked as a user would receive it: the files that would be uploaded
are copied to a fresh folder (MODEL itself is never modified) and loaded in a new Python process where
hf_dumpembed is not importable, through
AutoModel and SentenceTransformer (trust_remote_code=True; False for a stock export), and the vectors must agree
(also across encode_query / encode_document and batching). The folder must hold only safetensors weights (no
.bin/.pt/.pkl), its remote code, tokenizer and sentence-transformers files and a model card README.md with front
matter whose snippets load REPO_ID; plots/*.png and the training side files (training/config.yaml,
environment.json, data_files.json) are allowed, anything else is refused as a stray file. Only regular files inside
MODEL are staged: symbolic links, hard links shared with files outside it and special files are refused; every file
is checked by content (safetensors by its header, JSON/YAML by parsing, PNG by signature, no pickle or zip archive
under any name), and a file that looks like it holds a credential (Hugging Face, GitHub, AWS, OpenAI tokens, private
keys, password assignments) is refused. A failed check prints the report and uploads nothing.

The card is rendered in the copy for REPO_ID when MODEL has none or its snippets load another id (a card that
already loads REPO_ID is uploaded as it is). If the old card shows an evaluation table, give --results DIR again;
a stock export's card needs --source MODEL.

Then the repo is created (if missing), the branch too (--branch), and the staged files are committed as one
commit; files on that branch that the folder no longer has are deleted in the same commit (.gitattributes is
kept). The commit sha is printed: pin it as revision= in your code, in the card (`hf-dumpembed card MODEL
--model-id REPO_ID --revision SHA`, then push again) and in MTEB's ModelMeta.

The token comes from HF_TOKEN or the saved login (`hf auth login`); it is never printed or written. --dry-run
needs no token and no network: it runs the checks, stages the files and lists them (size, sha256).

Stock export: push it with --source MODEL (the DumpEmbed folder it came from) to its own repo or to a branch of
the model's repo (--branch stock); its card is rendered from MODEL, and its vectors must equal MODEL's.
"""


def _push(args: argparse.Namespace) -> None:
    from ..publishing.hub import push_folder

    result = push_folder(
        args.model,
        args.repo_id,
        private=args.private,
        branch=args.branch,
        commit_message=args.commit_message,
        dry_run=args.dry_run,
        source=args.source,
        staging_dir=args.stage_dir,
        results_dir=args.results,
        results_model=args.results_model,
        trust_remote_code=args.trust_remote_code,
    )
    say(result.report.describe())
    if args.dry_run:
        say(f"\nDry run: nothing was uploaded. Would commit to {result.repo_id}@{result.branch} "
            f"(files staged in {result.staging_dir}):")
        say(result.listing())
        return
    say(result.listing())
    if result.deleted:
        say(f"Deleted from {result.branch}: {', '.join(result.deleted)}")
    say(f"\nPushed to {result.repo_id}@{result.branch}: {result.commit_url}")
    say(f"commit sha (the revision to pin): {result.commit_sha}")
    say(f"To pin it in the card's snippets: hf-dumpembed card {args.model} --model-id {result.repo_id} --revision "
        f"{result.commit_sha}{' --source ' + args.source if args.source else ''}, then push again (only README.md "
        "changes; the model files stay those of the pinned commit).")


def register(commands: argparse._SubParsersAction) -> None:
    push = add_command(commands, "push", "check a model folder as users receive it, then upload it to the Hub",
                       DESCRIPTION)
    push.add_argument("model", help="a DumpEmbed model folder, or its stock export")
    push.add_argument("repo_id", help="the Hub repo, owner/name (created when missing)")
    push.add_argument("--private", action="store_true", help="create the repo private (no effect if it exists)")
    push.add_argument("--branch", default=None, metavar="B",
                      help="commit to branch B (created from main when missing) instead of main")
    push.add_argument("--commit-message", default=None, metavar="M",
                      help="commit summary (default: 'Upload MODEL with hf-dumpembed')")
    push.add_argument("--dry-run", action="store_true",
                      help="check and stage only: list the files (size, sha256); no token, no network")
    push.add_argument("--source", default=None, metavar="MODEL",
                      help="for a stock export: the DumpEmbed folder it came from, whose vectors it must equal")
    push.add_argument("--results", default=None, metavar="DIR",
                      help="mteb results for the card's evaluation table, when push renders the card")
    push.add_argument("--results-model", default=None, metavar="NAME",
                      help="which model's results to show when DIR holds several (as for `card`)")
    push.add_argument("--stage-dir", default=None, metavar="DIR",
                      help="stage the files here (an empty or new folder) instead of a temporary folder; a failed "
                      "push removes a folder it created (an existing one is emptied again)")
    add_trust_flag(push)
    push.set_defaults(func=_push)
