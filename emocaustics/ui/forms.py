"""What each form of the page runs: the command-line verbs of a job, built from the form's fields. A path field is
relative to the root folder (or `out:...`, a file the workbench wrote or was sent); every one is checked by
`paths.Folders` before a verb sees it. The verbs are the command line's own, so a form can do nothing the command line
cannot, and a number on the page is the number the command prints."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from emocaustics.core.errors import UsageError
from emocaustics.core.optionkeys import dataset_option
from emocaustics.core.task import get_task
from emocaustics.ui.paths import Folders, Refused

SUBMISSION_TASKS = ("aer", "ecpe", "narrative", "sextuple", "emotion")
AER_SPLITS = ("sample", "dev", "test", "train")
SUBSETS = ("sample", "paper-100", "long-20", "all")
PREDICTORS = ("oracle", "baseline")  # sextuple/emotion's built-in predictors (no file)


def _path(folders: Folders, form: dict[str, Any], key: str, what: str, *, required: bool = True) -> Path | None:
    typed = str(form.get(key) or "").strip()
    if not typed:
        if required:
            raise Refused(f"{what}: give a path under the root folder, or upload a file")
        return None
    return folders.resolve(typed, what)


def plan(kind: str, form: dict[str, Any], folders: Folders, folder: Path) -> tuple[str, list[tuple[str, list[str]]]]:
    """(title, steps) of a job of `kind`; its outputs go into `folder` (a new folder under the output folder)."""
    if kind == "human-process":
        hits = _path(folders, form, "hits", "ratings file")
        argv = ["human", "process", str(hits), "--out", str(folder / "run")]
        metadata = _path(folders, form, "metadata", "metadata file", required=False)
        if metadata is not None:  # a raw MTurk CSV's metadata (score types, models, qc-model): `--metadata`
            argv += ["--metadata", str(metadata)]
        for key, flag in (("ranking", "--ranking"), ("qc_threshold", "--qc-threshold")):  # given: passed on
            if value := str(form.get(key) or "").strip():
                argv += [flag, value]
        return f"human process {hits.name}", [("process", argv)]
    if kind == "human-replicate":
        run1, run2 = _path(folders, form, "run1", "run 1"), _path(folders, form, "run2", "run 2")
        return (f"human replicate {run1.name} {run2.name}",
                [("replicate", ["human", "replicate", str(run1), str(run2), "--out", str(folder / "replication")])])
    if kind == "submission":
        return _submission(form, folders, folder)
    if kind == "dialogue-judge":
        return _judge(form, folders, folder)
    raise UsageError(f"unknown job kind {kind!r}")


def _judge(form: dict[str, Any], folders: Folders, folder: Path) -> tuple[str, list[tuple[str, list[str]]]]:
    """An LLM judge put through a round as a worker (`eval dialogue-judge`). A model behind an endpoint only (its key
    from the workbench's environment): local weights would be read from outside the root folder."""
    from emocaustics.models.registry import is_remote
    from emocaustics.tasks.dialoguejudge.data import ROUNDS

    model, split, limit = (str(form.get(k) or "").strip() for k in ("model", "round", "limit"))
    if not is_remote(model):
        raise UsageError(f"model {model!r}: a model behind an endpoint (e.g. openai:gpt-4o-mini, "
                         "anthropic:claude-sonnet-4-5, openai:MODEL@http://HOST:PORT/v1)")
    if split not in ROUNDS:
        raise UsageError(f"round {split!r}: one of {', '.join(ROUNDS)}")
    if limit and not limit.isdigit():
        raise UsageError(f"limit {limit!r}: a number of conversations, or empty for all")
    data = _path(folders, form, "data", "conversations folder", required=False)
    argv = ["eval", "dialogue-judge", "--model", model, "--split", split, *(["-D", f"data={data}"] if data else []),
            *(["--limit", limit] if limit else []), "--out", str(folder / "run"), "--allow-failures"]
    return f"judge {model} on {split}", [("eval", argv)]


def _submission(form: dict[str, Any], folders: Folders, folder: Path) -> tuple[str, list[tuple[str, list[str]]]]:
    task = str(form.get("task") or "")
    if task not in SUBMISSION_TASKS:
        raise UsageError(f"task {task!r}: one of {', '.join(SUBMISSION_TASKS)}")
    typed = str(form.get("pred") or "").strip()
    pred = typed if task in ("sextuple", "emotion") and typed in PREDICTORS else _path(folders, form, "pred",
                                                                                         "submission")
    data = _path(folders, form, "data", "data folder", required=task == "narrative")
    with_data = ["--data", str(data)] if data is not None else []
    title = f"{task}: {Path(str(pred)).name}"
    if task == "aer":
        split = str(form.get("split") or "dev")
        if split not in AER_SPLITS:
            raise UsageError(f"split {split!r}: one of {', '.join(AER_SPLITS)}")
        return f"{title} on {split}", [
            ("validate", ["aer", "validate", str(pred), "--split", split, *with_data, "--json"]),
            ("score", ["score", "aer", "--pred", str(pred), "--split", split, *with_data, "--json",
                       "--allow-failures"])]
    if task == "ecpe":
        return title, [("validate", ["ecpe", "validate", str(pred), *with_data, "--json"]),
                       ("score", ["score", "ecpe", "--pred", str(pred), *with_data, "--json", "--allow-failures"])]
    if task == "narrative":
        return title, [("score", ["score", "narrative", "--pred", str(pred), *with_data, "--engine", "local",
                                  "--markdown", str(folder / "report.md"), "--json", "--allow-failures"])]
    key = dataset_option(get_task(task), "split") or "split"  # the task's name for its split (the form's field is named so)
    part = str(form.get(key) or "")
    if part and part not in SUBSETS:
        raise UsageError(f"{key} {part!r}: one of {', '.join(SUBSETS)}")
    return f"{title}{' on ' + part if part else ''}", [
        ("score", ["score", task, "--pred", str(pred), *with_data, *([f"--{key}", part] if part else []),
                   "--engine", "local", "--out", str(folder / "report"), "--json", "--allow-failures"])]
