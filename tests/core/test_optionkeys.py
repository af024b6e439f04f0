"""Issue 26: the jobs code names no task's options. A task's `Options` declare the options a job file's run may still
hold beside `task` (`legacy_run_keys`: EmoCaustics's window and step), and its `Dataset` the option `eval --split`
sets (`option_for`: EmoCaustics's subset). Test tasks that declare their own (`depth`, `fold`) get them with no
change in the core; a task that declares none gets only `method` lifted and only a `split` option set."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import ClassVar

import pytest

from emocaustics.core.errors import UsageError
from emocaustics.core.optionkeys import LegacyRunKeys, dataset_option, run_level_keys
from emocaustics.core.task import DatasetOptions, Methods, Options, Task, get_task, register, unregister
from emocaustics.jobs.oneline import eval_job
from emocaustics.jobs.spec import JobSpec

PACKAGE = Path(__file__).resolve().parents[2] / "emocaustics"


class DeepOptions(Options):
    legacy_run_keys: ClassVar[tuple[str, ...]] = ("depth",)
    depth: int = 1


class FoldDataset(DatasetOptions):
    option_for: ClassVar[dict[str, str]] = {"split": "fold"}
    fold: str = "f1"
    split: str = "whole"  # a `split` option it does not mean for --split: the declaration wins


class SubsetDataset(DatasetOptions):  # an option called subset, but no declaration: --split sets nothing
    subset: str = "all"


class DeepTask(Task):
    name = "deeptest"
    Options = DeepOptions
    Dataset = FoldDataset
    methods = Methods(calibration=("oracle",))


class PlainTask(Task):  # core's Options: declares no run keys
    name = "plainkeystest"
    Dataset = SubsetDataset
    methods = Methods(calibration=("oracle",))


@pytest.fixture(autouse=True)
def tasks():
    register(DeepTask())
    register(PlainTask())
    yield
    unregister("deeptest")
    unregister("plainkeystest")


def run_options(run: dict) -> dict:
    job = JobSpec.model_validate({"name": "x", "models": {"m": {"spec": "smoke"}}, "runs": [run]})
    return dict(job.runs[0].options)


def test_declarations_are_the_protocols():
    assert isinstance(DeepOptions, LegacyRunKeys) and not isinstance(Options, LegacyRunKeys)
    assert run_level_keys(get_task("deeptest")) == ("method", "depth")
    assert run_level_keys(get_task("plainkeystest")) == ("method",)
    assert run_level_keys(get_task("sextuple")) == ("method", "window", "step")
    assert [dataset_option(get_task(t), "split") for t in ("deeptest", "plainkeystest", "sextuple", "aer", "human")] \
        == ["fold", None, "subset", "split", None]
    assert [dataset_option(get_task(t), "ids") for t in ("deeptest", "sextuple", "emotion", "aer")] == \
        [None, "ids", "ids", None]


def test_a_declared_run_key_is_moved_under_options():
    assert run_options({"task": "deeptest", "method": "oracle", "depth": 4}) == {"method": "oracle", "depth": 4}
    # what `options:` says wins over the same key beside `task`; a None beside `task` is dropped
    assert run_options({"task": "deeptest", "method": "oracle", "depth": 4, "options": {"depth": 2}}) == \
        {"method": "oracle", "depth": 2}
    assert run_options({"task": "deeptest", "method": "oracle", "depth": None}) == {"method": "oracle"}


def test_emocaustics_window_and_step_beside_task_still_read():
    assert run_options({"task": "sextuple", "method": "window", "model": "m", "window": 10, "step": 5}) == \
        {"method": "window", "window": 10, "step": 5}


@pytest.mark.parametrize("run, message", [
    # another task's legacy key is no key of this task's runs
    ({"task": "plainkeystest", "method": "oracle", "depth": 4}, "job.runs.0.depth: unknown key"),
    ({"task": "aer", "method": "oracle", "window": 3}, "job.runs.0.window: unknown key"),
    ({"task": "deeptest", "method": "oracle", "window": 3}, "job.runs.0.window: unknown key"),
])
def test_an_undeclared_key_beside_task_is_unknown(run, message):
    from pydantic import ValidationError

    from emocaustics.jobs.spec import _messages

    with pytest.raises(ValidationError) as err:
        JobSpec.model_validate({"name": "x", "runs": [run]})
    assert _messages(err.value, "job") == message


def test_an_unknown_task_is_named_before_its_keys():
    with pytest.raises(UsageError, match="^unknown task 'sextupel'; known tasks: "):
        JobSpec.model_validate({"name": "x", "runs": [{"task": "sextupel", "method": "window", "window": 3}]})


def test_split_sets_the_declared_dataset_option():
    assert eval_job("deeptest", method="oracle", split="f3").dataset == {"deeptest": {"fold": "f3"}}
    assert eval_job("sextuple", method="oracle", split="paper-100").dataset == {"sextuple": {"subset": "paper-100"}}
    assert eval_job("aer", method="oracle", split="dev").dataset == {"aer": {"split": "dev"}}
    with pytest.raises(UsageError, match=r"^--split: task plainkeystest has no split; its dataset options: data, "
                                         r"subset \(give them with -D KEY=VALUE\)$"):
        eval_job("plainkeystest", method="oracle", split="all")


def test_no_module_outside_the_tasks_names_window_or_subset():
    """No string "window" or "subset" (EmoCaustics's option names) outside the task folders. ("step" is not checked:
    a model call's step in solve/ and evallog/ is a generic name.)"""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if "tasks" in path.relative_to(PACKAGE).parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and node.value in ("window", "subset"):
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert found == []
