"""One line for one evaluation: `emocaustics eval TASK --model SPEC ...` and `ec.eval(...)` become a one-config job.

`eval_job` turns the arguments into an ordinary `JobSpec` (one run, its model, its dataset options, the sample
selection), so an eval goes through `run_job` like any job: the same run folder, response cache, resume, report and
exit statuses. Every argument is checked against the task before anything runs, and a mistake is a `UsageError`
naming the argument and what the task accepts.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from emocaustics.core.errors import UsageError
from emocaustics.core.optionkeys import dataset_option
from emocaustics.core.task import Task, get_task
from emocaustics.jobs.evaloptions import EVAL_OPTIONS, PLACES
from emocaustics.jobs.spec import JobSpec

MODEL_HINT = "openai:MODEL, anthropic:MODEL, ollama:MODEL, vllm:PATH_OR_NAME or smoke"


def parse_assignments(pairs: list[str] | None, flag: str) -> dict[str, Any]:
    """`key=value` arguments as a mapping; a value is read as a YAML scalar (`3` an int, `true` a bool, `[1, 2]` a
    list, anything else a string)."""
    out: dict[str, Any] = {}
    for pair in pairs or []:
        key, eq, raw = pair.partition("=")
        if not eq or not key.strip():
            raise UsageError(f"{flag} {pair!r}: expected KEY=VALUE")
        try:
            out[key.strip()] = yaml.safe_load(raw) if raw.strip() else ""
        except yaml.YAMLError:
            out[key.strip()] = raw
    return out


def _fields(model: Any, skip: tuple[str, ...] = ()) -> list[str]:
    return [k for k in model.model_fields if k not in skip]


def _method(task: Task, method: str | None, options: dict[str, Any], model: str | None) -> str:
    """--method, else `-T method=`, else the task's default method, else its first model method when a model is
    given; a method that calls a model without one is an error that names the calibration methods."""
    methods = task.methods.all
    chosen = method or options.pop("method", None)
    if chosen is None:
        field = task.Options.model_fields["method"]
        default = None if field.is_required() else field.get_default()
        chosen = default if default in methods else (task.methods.solver[0] if model and task.methods.solver else None)
    if chosen is None:
        raise UsageError(f"task {task.name}: give --method (one of {', '.join(methods)})")
    if chosen not in methods:
        raise UsageError(f"--method {chosen}: task {task.name} has the methods {', '.join(methods)}")
    if chosen in task.methods.solver and not model:
        calib = "|".join(task.methods.calibration)
        raise UsageError(f"method {chosen} of task {task.name} calls a model: give --model SPEC ({MODEL_HINT})"
                         + (f", or a method that needs none (--method {calib})" if calib else ""))
    return str(chosen)


def model_key(spec: str) -> str:
    """A short name for the model in labels and folders: `openai:gpt-4o-mini@URL` -> `gpt-4o-mini`."""
    head = spec.split("?", 1)[0]
    name = head.split(":", 1)[1] if ":" in head else head
    name = name.split("@", 1)[0].rstrip("/").rsplit("/", 1)[-1]
    return re.sub(r"[^A-Za-z0-9_-]+", "-", name).strip("-") or "model"


# Options of a remote spec's query that a job sets as model keys (the runner writes those over the spec's own).
MODEL_KEYS = ("concurrency", "max_connection_failures", "max_server_errors", "stall_seconds")


def model_entry(spec: str) -> dict[str, Any]:
    """A job's `models` entry for a spec: shorthands written out, and the query options that are model keys
    (`?concurrency=8`) moved to those keys, so that what the user wrote is what runs."""
    from urllib.parse import parse_qsl, urlencode

    from emocaustics.models.registry import is_remote
    from emocaustics.models.spec import expand_shorthand

    try:
        full = expand_shorthand(spec)
    except UsageError as exc:
        raise UsageError(f"--model: {exc}") from None
    head, _, query = full.partition("?")
    if not is_remote(head) or not query:
        return {"spec": full}
    pairs = parse_qsl(query, keep_blank_values=True)
    rest = [(k, v) for k, v in pairs if k not in MODEL_KEYS]
    return {"spec": head + ("?" + urlencode(rest) if rest else ""), **{k: v for k, v in pairs if k in MODEL_KEYS}}


# The `-T`/`-D` options: KEY=VALUE words on the command line, a mapping for `eval_job`.
ASSIGNED = ("options", "dataset")


def eval_arguments(args: Any) -> dict[str, Any]:
    """`eval_job`'s keywords from the command line's parsed arguments (`-T`/`-D` words read as a mapping)."""
    return {o.name: parse_assignments(getattr(args, o.name), o.flag) if o.name in ASSIGNED else getattr(args, o.name)
            for o in EVAL_OPTIONS if o.goes != "command"}


def eval_job(task: str, *, model: str | None = None, method: str | None = None, split: str | None = None,
             options: dict[str, Any] | None = None, dataset: dict[str, Any] | None = None, **given: Any) -> JobSpec:
    """The one-config job of an eval (see the module docstring). `options` are the task's options (`-T`),
    `dataset` its dataset options (`-D`), `split` the value of the dataset option the task's `--split` sets;
    `given`: the other options of `EVAL_OPTIONS` (the selection `ids`/`limit`, `judge`/`embedder`, `no_score`: solve
    and write the predictions only, the run's epochs, reducer and limits), each put where its row says."""
    from emocaustics.jobs.spec import _messages  # one wording for spec errors

    placed = {o.name: o for o in EVAL_OPTIONS if o.goes in PLACES}
    if (stray := next((k for k in given if k not in placed), None)) is not None:
        raise TypeError(f"eval_job() got an unexpected keyword argument {stray!r}")
    the_task = get_task(task)
    options, dataset = dict(options or {}), dict(dataset or {})
    known = _fields(the_task.Options, ("method",))
    unknown = [k for k in options if k not in known and k != "method"]
    if unknown:
        raise UsageError(f"-T {unknown[0]}: task {task} has no option {unknown[0]!r}; its options: "
                         f"{', '.join(known) or '(none)'}")
    data_fields = _fields(the_task.Dataset)
    unknown = [k for k in dataset if k not in data_fields]
    if unknown:
        raise UsageError(f"-D {unknown[0]}: task {task} has no dataset option {unknown[0]!r}; its dataset options: "
                         f"{', '.join(data_fields)}")
    if split is not None:
        field = dataset_option(the_task, "split")  # the task's declared option, else its `split` (core/optionkeys.py)
        if field is None:
            raise UsageError(f"--split: task {task} has no split; its dataset options: {', '.join(data_fields)} "
                             "(give them with -D KEY=VALUE)")
        dataset[field] = split
    chosen = _method(the_task, method, options, model)
    needs_model = chosen in the_task.methods.solver
    if model and not needs_model:  # the run would ignore it: a user who named a model wants it used
        raise UsageError(f"--model {model_key(model)}: method {chosen} of task {task} calls no model; leave out "
                         f"--model, or choose a method that calls one ({', '.join(the_task.methods.solver) or 'none'})")
    if given.get("no_score") and not needs_model:  # its predictions are made while scoring: nothing to solve
        raise UsageError(f"--no-score: method {chosen} of task {task} calls no model, so there is nothing to solve; "
                         "leave out --no-score")
    ids = given.get("ids")
    if ids is not None and not [i for i in ids if str(i).strip()]:  # `--ids ,` would select every sample
        raise UsageError("--ids: no sample id given (an empty list would select every sample); give ids separated "
                         "by commas, or leave out --ids")
    key = model_key(model) if (model and needs_model) else None
    raw: dict[str, Any] = {
        "name": re.sub(r"[^A-Za-z0-9_.-]+", "-", "-".join(p for p in ("eval", task, chosen, key) if p)),
        "dataset": {task: dataset}, "models": {key: model_entry(model)} if (key and model) else {},
        "runs": [{"task": task, "model": key, "options": {"method": chosen, **options}}], "scoring": {}, "select": {}}
    for name, value in given.items():
        if value is not None and value is not False:  # not given: the job's default
            option = placed[name]
            if option.goes == "model" and key is None:
                raise UsageError(f"{option.switch}: method {chosen} of task {task} calls no model")
            _target(raw, option.goes, task, key)[name] = value
    if not raw["select"]:
        del raw["select"]
    try:
        job = JobSpec.model_validate(raw)
    except ValidationError as exc:
        raise UsageError(_flags(_messages(exc, "eval"), task, key)) from None
    if key:
        from emocaustics.models.spec import parse_llm_spec

        parse_llm_spec(job.models[key].spec)  # a malformed spec is named now, not at the pre-flight
    return job


def _target(raw: dict[str, Any], goes: str, task: str, key: str | None) -> dict[str, Any]:
    run = raw["runs"][0]
    return {"job": raw, "run": run, "select": raw["select"], "scoring": raw["scoring"], "option": run["options"],
            "dataset": raw["dataset"][task], "model": raw["models"].get(key)}[goes]


def _flags(text: str, task: str, key: str | None) -> str:
    """Spec error paths in the words of the command line: each option's place (`PLACES`) as its flag, then a task
    option as `-T key`, a dataset option as `-D key` and the model's spec as `--model`."""
    words = [(PLACES[o.goes].format(name=o.name, task=task, key=key) + ":", o.switch + ":")
             for o in EVAL_OPTIONS if o.goes in PLACES]
    words += [("runs.0.options.", "-T "), ("runs.0: dataset.", "-D "), (f"dataset.{task}.", "-D "),
              (f"models.{key}.spec:", "--model:")]
    text = text.replace("Value error, ", "").replace("eval: ", "").replace("eval.", "")
    for path, flag in words:
        text = text.replace(path, flag)
    return text


def check_submission(job: JobSpec, target: Path) -> None:
    """`--submission-file` for a task that writes none (its scorer's `submission_files` empty), or with a suffix
    none of its files has, is refused before running."""
    task, _ = job.expand()[0].resolve()
    files = task.scorer.submission_files
    if not files:
        raise UsageError(f"--submission-file: task {task.name} writes no submission file")
    if target.suffix and target.suffix not in {Path(n).suffix for n in files}:
        raise UsageError(f"--submission-file {target}: task {task.name} writes {', '.join(files)}; "
                         "give a path with one of their suffixes")


def copy_submission(run_dir: Path, job: JobSpec, target: Path) -> Path:
    """Copy the config's submission to `target`: the file of the task's `submission_files` with `target`'s suffix
    (the first, the default, when `target` has none); none or several that fit is a UsageError naming them."""
    import shutil

    check_submission(job, target)
    run = job.expand()[0]
    task, _ = run.resolve()
    folder = run_dir / "predictions" / run.label
    written = [folder / n for n in task.scorer.submission_files if (folder / n).is_file()]
    match = [p for p in written if p.suffix == target.suffix] if target.suffix else written[:1]
    if len(match) != 1:
        names = ", ".join(p.name for p in written) or "nothing"
        raise UsageError(f"--submission-file {target}: this config of task {run.task} wrote {names}; give a path "
                         "whose suffix picks one of them")
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(match[0], target)
    return target
