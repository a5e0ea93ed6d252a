"""What the MTEB leaderboard accepts: results of tasks mteb knows, complete for the task's evaluation splits."""

from __future__ import annotations

from pathlib import Path

from .presets import GROUPS

HOW_TO_RUN_OFFICIAL = (
    "Run the official tasks where the Hugging Face Hub is reachable, e.g. `hf-dumpembed eval MODEL --task "
    "dump-standard --task dump-longembed --results-dir results-official` (or `--task NAME` for any mteb task; with "
    "`datasets` 5.x only LEMBPasskeyRetrieval of dump-longembed loads), then "
    "`hf-dumpembed submission MODEL --results results-official OUT`."
)


def check_leaderboard_results(task_files: list[Path]) -> None:
    """Raise ``ValueError`` unless every result file is an mteb task that mteb knows, with all of its evaluation
    splits and subsets (``TaskResult.validate_and_filter_scores``, what ``ResultCache.load_results`` applies)."""
    import mteb

    from .results import read_task_result

    unknown, incomplete = [], []
    for path in task_files:
        result = read_task_result(path)
        try:
            task = mteb.get_task(result.task_name)
        except (KeyError, ValueError):
            unknown.append(f"{path.name} ({result.task_name})")
            continue
        try:
            result.validate_and_filter_scores(task=task)
        except Exception as error:  # pydantic ValidationError / ValueError: name the file and mteb's reason
            incomplete.append(f"{path.name}: {error}".splitlines()[0])
    if unknown:
        raise ValueError(
            "refusing to package leaderboard results for tasks mteb does not know: " + ", ".join(unknown) + ". "
            "These are local tasks (BEIR folders or the collections built by scripts/build_datasets.py, e.g. "
            f"{', '.join(GROUPS['local'])}); their scores are fine for the model card, but the leaderboard only "
            "lists official mteb tasks. Move them out of the results folder (or evaluate into a separate "
            f"--results-dir). {HOW_TO_RUN_OFFICIAL}"
        )
    if incomplete:
        raise ValueError(
            "refusing to package incomplete leaderboard results (mteb's validation failed): " + "; ".join(incomplete)
            + f". Re-run those tasks with `hf-dumpembed eval ... --overwrite`. {HOW_TO_RUN_OFFICIAL}"
        )
