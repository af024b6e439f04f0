"""The run-folder decisions of jobs/rundir.py (issue 44, the `rundir` mutation area), pinned fast: which folder a job
may use (`claim`: a fresh, an empty, a taken, a file or an under-a-file folder, with and without --resume/--force)
and the exact one-line message of each refusal; which job fields change the hash (`result_fields`, listed here by
hand, and the sha256 of that listing); the name `--force` gives the old folder (`_aside`); run.json after `start`,
`finish` and each wall-clock save, byte for byte where the format matters; and a full disk while saving it.

Stand-ins instead of waiting: the module's `datetime` is a clock frozen at 2026-11-29 12:00:05 (`frozen_now`), its
`time.perf_counter` a number the test moves (`perf`), and the wall clock's own thread runs on a 1 ms interval with
the stand-in counter, so no test sleeps. No Ray, no engine, no model: jobs use the `count` test task.
"""

from __future__ import annotations

import datetime as dt
import errno
import hashlib
import io
import json
import os
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any, ClassVar

import pytest
from count_task import CountDataset, CountOptions, CountTask

from emocaustics.core.errors import NothingToResume, ResumeMismatch, RunFolderTaken, UsageError, WriteFailed
from emocaustics.core.task import register, unregister
from emocaustics.jobs import rundir
from emocaustics.jobs.rundir import (Claim, WallClock, _aside, _differences, claim, finish, job_hash, read_run,
                                     result_fields, start)
from emocaustics.jobs.spec import JobSpec
from emocaustics.jobs.configs import resolve as _resolved  # the claim takes the job as resolved

BASE: dict[str, Any] = {"name": "h", "dataset": {"n": 3}, "runs": [{"task": "count", "method": "ask", "model": "m"}],
                        "models": {"m": {"spec": "vllm:org/model", "engine": {"max_model_len": 4096}}}}
# result_fields(BASE), by hand: the job's own fields less names/places/spread, the model less where it runs, the one
# run expanded (label count_ask_m, its options and dataset), the task's prompt version.
FIELDS: dict[str, Any] = {
    "dataset": {"n": 3},
    "models": {"m": {"spec": "vllm:org/model", "engine": {"max_model_len": 4096}}},
    "scoring": {"embedder": "minilm", "judge": "none"},
    "log": {"prompts": True},
    "runs": [{"label": "count_ask_m", "task": "count", "model": "m", "options": {"method": "ask"},
              "dataset": {"n": 3}}],
    "prompts_versions": {"count": "count-v1"},
}
HASH = "d95f90185aa69baa"  # the hash BASE has always had: a change here re-labels every existing run folder
OTHER = "0123456789abcdef"
NOW = dt.datetime(2026, 11, 29, 12, 0, 5, 123456)


def sha16(fields: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(fields, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()[:16]


def job(**changes: Any) -> JobSpec:
    return JobSpec.model_validate({**BASE, **changes})


def with_model(**changes: Any) -> JobSpec:
    return job(models={"m": {**BASE["models"]["m"], **changes}})


def write_run(folder: Path, record: dict[str, Any]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "run.json").write_text(json.dumps(record), encoding="utf-8")


class Frozen(dt.datetime):
    now_value = NOW

    @classmethod
    def now(cls, tz: dt.tzinfo | None = None) -> dt.datetime:  # type: ignore[override]
        return cls.now_value.replace(tzinfo=tz)


@pytest.fixture
def frozen_now(monkeypatch: pytest.MonkeyPatch) -> type[Frozen]:
    Frozen.now_value = NOW
    monkeypatch.setattr(rundir, "datetime", Frozen)
    return Frozen


@pytest.fixture
def perf(monkeypatch: pytest.MonkeyPatch) -> SimpleNamespace:
    clock = SimpleNamespace(now=100.0)
    monkeypatch.setattr(rundir, "time", SimpleNamespace(perf_counter=lambda: clock.now))
    return clock


@pytest.fixture
def track():
    """Every wall clock a test starts ends with the test, whatever the test (or a mutant of the module) did: a clock
    left running would save into a later test's run."""
    clocks: list[WallClock] = []
    yield lambda clock: clocks.append(clock) or clock
    for clock in clocks:
        clock._stop.set()
        clock._thread.join(timeout=5)


ROOM = "; what was written is kept, and `--resume` continues once there is room"
ENOSPC = OSError(errno.ENOSPC, "No space left on device")


def no_room(self: Path, *a: Any, **k: Any) -> None:
    raise ENOSPC


# --- which fields make the hash ----------------------------------------------------------------------------------

def test_the_result_fields_of_a_job_are_its_dataset_models_scoring_log_runs_and_prompts(count_task):
    assert result_fields(job()) == FIELDS
    assert list(result_fields(job())) == list(FIELDS)  # run.json's "fields" in this order: the expanded runs last
    assert job_hash(job()) == HASH == sha16(FIELDS)


@pytest.mark.parametrize("changes", [
    {"name": "other", "description": "words"}, {"output": "elsewhere"}, {"cache": "off"}, {"concurrency": 8},
    {"ray": {"address": "auto", "num_cpus": 4}}, {"max_cost_usd": 2.5}, {"select": None}])
def test_names_places_and_spread_do_not_change_the_hash(count_task, changes):
    assert result_fields(job(**changes)) == FIELDS
    assert job_hash(job(**changes)) == HASH


@pytest.mark.parametrize("changes", [
    {"replicas": 4, "gpus_per_replica": 2, "placement": "spread"}, {"concurrency": 3},
    {"max_connection_failures": 9, "max_server_errors": 9, "stall_seconds": 30}, {"rpm": 60, "tpm": 1000},
    {"price": {"input": 1.0, "output": 2.0}}, {"keep_alive": True}, {"batch": True}])
def test_where_and_how_fast_a_model_runs_does_not_change_the_hash(count_task, changes):
    assert result_fields(with_model(**changes)) == FIELDS


def test_speed_options_of_the_engine_are_dropped_and_the_others_kept(count_task):
    engine = {"max_model_len": 4096, "gpu_memory_utilization": 0.8, "enforce_eager": True, "timeout": 60,
              "max_retries": 3, "batch_size": 10}
    assert result_fields(with_model(engine=engine)) == FIELDS
    fields = result_fields(with_model(engine={**engine, "temperature_default": 0.5, "max_model_len": 8192}))
    assert fields["models"] == {"m": {"spec": "vllm:org/model",
                                      "engine": {"max_model_len": 8192, "temperature_default": 0.5}}}
    # a value kept as it is in JSON (bytes as text), and the hash of text that is not ASCII is that of its UTF-8
    fields = result_fields(with_model(engine={"max_model_len": 4096, "chat_template": b"caf\xc3\xa9"}))
    expected = {**FIELDS, "models": {"m": {"spec": "vllm:org/model",
                                           "engine": {"max_model_len": 4096, "chat_template": "café"}}}}
    assert fields == expected
    assert job_hash(with_model(engine={"max_model_len": 4096, "chat_template": b"caf\xc3\xa9"})) == sha16(expected)
    assert sha16(expected) != hashlib.sha256(json.dumps(expected, sort_keys=True).encode()).hexdigest()[:16]


def test_the_runs_are_listed_by_label_with_their_select_epochs_and_reducer(count_task):
    runs = [{"task": "count", "method": "ask", "model": "m", "select": {"limit": 2}},
            {"task": "count", "method": "ask", "model": "m", "name": "a_ask", "epochs": 3, "reducer": "mean",
             "dataset": {"n": 2}},
            {"task": "count", "method": "right"}]
    fields = result_fields(job(runs=runs))
    assert fields["runs"] == [
        {"label": "a_ask", "task": "count", "model": "m", "options": {"method": "ask"}, "dataset": {"n": 2},
         "epochs": 3, "reducer": "mean"},
        {"label": "count_ask_m", "task": "count", "model": "m", "options": {"method": "ask"}, "dataset": {"n": 3},
         "select": {"limit": 2}},
        {"label": "count_right", "task": "count", "model": None, "options": {"method": "right"},
         "dataset": {"n": 3}}]
    assert {k: v for k, v in fields.items() if k != "runs"} == {k: v for k, v in FIELDS.items() if k != "runs"}
    # the job's own select is recorded per run; epochs 2 is recorded too
    fields = result_fields(job(select={"ids": ["s1"]}, runs=[{**BASE["runs"][0], "name": "e2", "epochs": 2}]))
    assert fields["runs"] == [{**FIELDS["runs"][0], "label": "e2", "select": {"ids": ["s1"]}, "epochs": 2}]
    assert "select" not in fields


class DatedOptions(CountOptions):
    when: dt.date | None = None


class DatedDataset(CountDataset):
    when: Any = None


class DatedCount(CountTask):
    name: ClassVar[str] = "dated"
    Options = DatedOptions
    Dataset = DatedDataset
    prompts_version: ClassVar[str] = "dated-v2"


@pytest.fixture
def dated():
    task = register(DatedCount())
    yield task
    unregister(task.name)


def test_dates_in_options_and_datasets_are_recorded_as_text(dated):
    day = dt.date(2024, 1, 2)
    spec = JobSpec.model_validate({"name": "d", "dataset": {"n": 1, "when": day},
                                   "runs": [{"task": "dated", "options": {"method": "right", "when": day}}]})
    fields = result_fields(spec)
    assert fields["runs"] == [{"label": "dated_right_when=2024-01-02", "task": "dated", "model": None,
                               "options": {"method": "right", "when": "2024-01-02"},
                               "dataset": {"n": 1, "when": day}}]  # the run's dataset as written: the hash's str()
    assert fields["dataset"] == {"n": 1, "when": "2024-01-02"} and fields["prompts_versions"] == {"dated": "dated-v2"}
    text = {**fields, "runs": [{**fields["runs"][0], "dataset": {"n": 1, "when": "2024-01-02"}}]}
    assert job_hash(spec) == sha16(text)


# --- claim: may this job use this folder? -----------------------------------------------------------------------

def fresh(name: str = "h", digest: str = HASH, fields: dict[str, Any] = FIELDS) -> dict[str, Any]:
    return {"job": name, "hash": digest, "state": "new", "fields": fields, "wall_parts": {}}


def test_a_missing_or_empty_folder_is_a_fresh_run_and_nothing_is_written(count_task, tmp_path):
    run_dir = tmp_path / "deep" / "run"
    for force in (False, True):
        c = claim(run_dir, _resolved(job(), run_dir), resume=False, force=force)
        assert (c.run_dir, c.resumed, c.record, c.moved_to) == (run_dir, False, fresh(), None)
        assert c.resumed is False
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "empty").mkdir()
    c = claim(tmp_path / "empty", _resolved(job(), tmp_path / "empty"), resume=False, force=True)
    assert (c.run_dir, c.resumed, c.record, c.moved_to) == (tmp_path / "empty", False, fresh(), None)
    assert c.resumed is False


def test_a_folder_holding_a_run_is_taken(count_task, tmp_path):
    run_dir = tmp_path / "run"
    write_run(run_dir, {"job": "a", "hash": OTHER, "state": "finished"})
    tail = "; use --resume to continue it (same job), --force to move it aside (it is kept), or another --out"
    with pytest.raises(RunFolderTaken) as e:
        claim(run_dir, _resolved(job(), run_dir), resume=False, force=False)
    assert str(e.value) == f"{run_dir} holds a finished run of job 'a' (hash {OTHER}){tail}"
    write_run(run_dir, {"job": "h", "hash": HASH})  # the same job, without a state: still taken without --resume
    with pytest.raises(RunFolderTaken) as e:
        claim(run_dir, _resolved(job(), run_dir), resume=False, force=False)
    assert str(e.value) == f"{run_dir} holds a ? run of job 'h' (hash {HASH}){tail}"
    (run_dir / "run.json").write_text("{half", encoding="utf-8")
    with pytest.raises(RunFolderTaken) as e:
        claim(run_dir, _resolved(job(), run_dir), resume=False, force=False)
    assert str(e.value) == f"{run_dir} holds a unreadable run of job '?' (hash ?){tail}"
    (run_dir / "run.json").unlink()
    (run_dir / "notes.txt").write_text("mine", encoding="utf-8")
    with pytest.raises(RunFolderTaken) as e:
        claim(run_dir, _resolved(job(), run_dir), resume=False, force=False)
    assert str(e.value) == (f"{run_dir} is not empty and holds no run.json (not a run folder of this version)"
                            f"{tail}")
    assert sorted(p.name for p in run_dir.iterdir()) == ["notes.txt"]


def test_a_file_or_a_folder_under_a_file_is_refused(count_task, tmp_path):
    afile = tmp_path / "f"
    afile.write_text("x", encoding="utf-8")
    for resume in (False, True):
        with pytest.raises(RunFolderTaken) as e:
            claim(afile, _resolved(job(), afile), resume=resume, force=True)
        assert str(e.value) == f"{afile} is a file, not a run folder"
    for run_dir in (afile / "run", afile / "x" / "run"):
        with pytest.raises(UsageError) as e:
            claim(run_dir, _resolved(job(), run_dir), resume=False, force=False)
        assert type(e.value) is UsageError
        assert str(e.value) == f"the run folder {run_dir} cannot be made: {afile} is not a folder"
    gone = tmp_path / "gone"
    gone.symlink_to(tmp_path / "nowhere")  # a broken link
    with pytest.raises(UsageError) as e:
        claim(gone / "run", _resolved(job(), gone / "run"), resume=False, force=False)
    assert str(e.value) == f"the run folder {gone / 'run'} cannot be made: {gone} is not a folder"


def test_resume_needs_a_run_to_continue(count_task, tmp_path):
    tail = "; there is no run to continue (leave out --resume to start one)"
    with pytest.raises(NothingToResume) as e:
        claim(tmp_path / "run", _resolved(job(), tmp_path / "run"), resume=True, force=False)
    assert str(e.value) == f"--resume: {tmp_path / 'run'} does not exist{tail}"
    (tmp_path / "run").mkdir()
    with pytest.raises(NothingToResume) as e:
        claim(tmp_path / "run", _resolved(job(), tmp_path / "run"), resume=True, force=True)
    assert str(e.value) == f"--resume: {tmp_path / 'run'} is empty{tail}"


def test_resume_of_the_same_job_continues_its_record(count_task, tmp_path):
    run_dir = tmp_path / "run"
    record = {"job": "renamed", "hash": HASH, "state": "running", "wall_parts": {"count_ask_m": [1.5]}}
    write_run(run_dir, record)
    renamed = _resolved(job(name="renamed-again", output="x"), run_dir)
    c = claim(run_dir, renamed, resume=True, force=True)  # --resume wins over --force
    assert (c.run_dir, c.resumed, c.record, c.moved_to) == (run_dir, True, record, None)
    assert c.resumed is True


def test_resume_of_another_job_names_the_fields_that_differ(count_task, tmp_path):
    run_dir = tmp_path / "run"
    theirs = {**FIELDS, "dataset": {"n": 4}, "scoring": {"embedder": "minilm", "judge": "none"}, "extra": 1}
    theirs["runs"] = [{**FIELDS["runs"][0], "dataset": {"n": 4}}]
    write_run(run_dir, {"job": "h", "hash": OTHER, "state": "running", "fields": theirs})
    tail = "; resume it with its own job file, or start this job in another --out"
    with pytest.raises(ResumeMismatch) as e:
        claim(run_dir, _resolved(job(), run_dir), resume=True, force=False)
    assert str(e.value) == (f"--resume: {run_dir} holds a running run of job 'h' (hash {OTHER}), not of this job 'h' "
                            f"(hash {HASH}); they differ in: dataset, extra, runs{tail}")
    write_run(run_dir, {"job": "h", "hash": OTHER, "state": "finished"})  # an older run.json, without fields
    with pytest.raises(ResumeMismatch) as e:
        claim(run_dir, _resolved(job(), run_dir), resume=True, force=False)
    assert str(e.value) == (f"--resume: {run_dir} holds a finished run of job 'h' (hash {OTHER}), not of this job "
                            f"'h' (hash {HASH}){tail}")
    (run_dir / "run.json").unlink()
    (run_dir / "notes.txt").write_text("mine", encoding="utf-8")
    with pytest.raises(ResumeMismatch) as e:
        claim(run_dir, _resolved(job(), run_dir), resume=True, force=False)
    assert str(e.value) == (f"--resume: {run_dir} is not empty and holds no run.json (not a run folder of this "
                            f"version), not of this job 'h' (hash {HASH}){tail}")


def test_differences_are_the_sorted_keys_whose_values_differ():
    assert _differences(None, {"a": 1}) == ""
    assert _differences({}, {"a": 1}) == ""
    assert _differences({"a": 1, "b": 2}, {"a": 1, "b": 2}) == ""
    assert _differences({"c": 3, "a": 1, "b": 2}, {"b": 2, "c": 4, "d": 5}) == "; they differ in: a, c, d"


def test_force_plans_a_dated_sibling_and_moves_nothing_yet(count_task, tmp_path, frozen_now):
    run_dir = tmp_path / "run"
    write_run(run_dir, {"job": "a", "hash": OTHER, "state": "finished"})
    c = claim(run_dir, _resolved(job(), run_dir), resume=False, force=True)
    assert (c.run_dir, c.resumed, c.record) == (run_dir, False, fresh())
    assert c.moved_to == tmp_path / "run.replaced-20261129-120005"
    assert c.resumed is False
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]
    assert json.loads((run_dir / "run.json").read_text()) == {"job": "a", "hash": OTHER, "state": "finished"}


def test_the_aside_name_counts_up_when_taken(tmp_path, frozen_now):
    run_dir = tmp_path / "out.v1"
    assert _aside(run_dir) == tmp_path / "out.v1.replaced-20261129-120005"
    (tmp_path / "out.v1.replaced-20261129-120005").mkdir()
    assert _aside(run_dir) == tmp_path / "out.v1.replaced-20261129-120005-2"
    (tmp_path / "out.v1.replaced-20261129-120005-2").write_text("", encoding="utf-8")
    assert _aside(run_dir) == tmp_path / "out.v1.replaced-20261129-120005-3"
    frozen_now.now_value = dt.datetime(2027, 2, 3, 4, 5, 6)
    assert _aside(run_dir) == tmp_path / "out.v1.replaced-20270203-040506"


# --- run.json: start, finish ------------------------------------------------------------------------------------

class Stdout(io.StringIO):
    def __init__(self) -> None:
        super().__init__()
        self.flushed_at: list[str] = []

    def flush(self) -> None:
        self.flushed_at.append(self.getvalue())


def test_start_moves_the_forced_out_run_aside_and_writes_running(count_task, tmp_path, frozen_now, monkeypatch):
    run_dir = tmp_path / "run"
    write_run(run_dir, {"job": "a", "hash": OTHER, "state": "finished"})
    c = claim(run_dir, _resolved(job(), run_dir), resume=False, force=True)
    out = Stdout()
    monkeypatch.setattr("sys.stdout", out)
    start(c)
    aside = tmp_path / "run.replaced-20261129-120005"
    line = f"--force: the previous run in {run_dir} was moved to {aside}\n"
    assert out.getvalue() == line and line in out.flushed_at  # said at once, before the run's own lines
    assert json.loads((aside / "run.json").read_text()) == {"job": "a", "hash": OTHER, "state": "finished"}
    assert sorted(p.name for p in run_dir.iterdir()) == ["config.yaml", "run.json", "run.lock"]  # run.lock: the claim
    running = {**fresh(), "state": "running", "started": "2026-11-29T12:00:05+00:00"}
    assert json.loads((run_dir / "run.json").read_text(encoding="utf-8")) == running == c.record
    Frozen.now_value = dt.datetime(2026, 11, 29, 13, 1, 2, 999999)
    finish(c)
    done = {**running, "state": "finished", "finished": "2026-11-29T13:01:02+00:00"}
    assert json.loads((run_dir / "run.json").read_text(encoding="utf-8")) == done == c.record


def test_start_of_a_fresh_run_makes_the_folders_above(count_task, tmp_path, frozen_now, capsys):
    c = claim(tmp_path / "a" / "b" / "run", _resolved(job(), tmp_path / "a" / "b" / "run"), resume=False, force=False)
    start(c)
    assert capsys.readouterr().out == ""
    assert json.loads((tmp_path / "a" / "b" / "run" / "run.json").read_text()) == {
        "job": "h", "hash": HASH, "state": "running", "fields": FIELDS, "wall_parts": {},
        "started": "2026-11-29T12:00:05+00:00"}


def test_a_resumed_start_keeps_its_first_start_and_wall_parts(tmp_path, frozen_now):
    run_dir = tmp_path / "run"
    write_run(run_dir, {"job": "h", "hash": HASH, "state": "finished", "started": "2026-01-01T00:00:00+00:00",
                        "finished": "2026-01-01T01:00:00+00:00", "wall_parts": {"cfg": [1.5]}})
    c = Claim(run_dir, True, read_run(run_dir))
    start(c)
    assert json.loads((run_dir / "run.json").read_text()) == {
        "job": "h", "hash": HASH, "state": "running", "started": "2026-01-01T00:00:00+00:00",
        "finished": "2026-01-01T01:00:00+00:00", "wall_parts": {"cfg": [1.5]}}
    c = Claim(run_dir, True, {"job": "h", "hash": HASH, "state": "finished", "started": "x"})  # older: no wall_parts
    start(c)
    assert json.loads((run_dir / "run.json").read_text()) == {"job": "h", "hash": HASH, "state": "running",
                                                            "started": "x", "wall_parts": {}}


def test_a_folder_that_cannot_be_made_is_a_usage_error_and_a_full_disk_a_write_failure(tmp_path, monkeypatch):
    afile = tmp_path / "f"
    afile.write_text("x", encoding="utf-8")
    with pytest.raises(UsageError) as e:
        start(Claim(afile / "run", False, {}))
    assert type(e.value) is UsageError
    assert str(e.value) == (f"the run folder {afile / 'run'} cannot be made: Not a directory (ENOTDIR); "
                            "give another --out")
    monkeypatch.setattr(Path, "mkdir", lambda self, **k: (_ for _ in ()).throw(OSError("no reason given")))
    with pytest.raises(UsageError) as e:
        start(Claim(tmp_path / "run", False, {}))
    assert str(e.value) == (f"the run folder {tmp_path / 'run'} cannot be made: no reason given (error); "
                            "give another --out")
    monkeypatch.setattr(Path, "mkdir", no_room)
    with pytest.raises(WriteFailed) as e:
        start(Claim(tmp_path / "run", False, {}))
    assert str(e.value) == f"cannot write {tmp_path / 'run'}: No space left on device (ENOSPC){ROOM}"


# --- run.json on disk ---------------------------------------------------------------------------------------------

def test_run_json_is_written_whole_as_indented_utf8(tmp_path):
    c = Claim(tmp_path, False, {"job": "café", "parts": [1.5]})
    c.save()
    assert (tmp_path / "run.json").read_bytes() == '{\n "job": "café",\n "parts": [\n  1.5\n ]\n}'.encode("utf-8")
    assert [p.name for p in tmp_path.iterdir()] == ["run.json"]
    assert read_run(tmp_path) == {"job": "café", "parts": [1.5]}


def test_run_json_is_utf8_whatever_the_locale(tmp_path, monkeypatch):
    """On a host whose locale is Latin-1 (simulated: a read or write without an encoding uses Latin-1)."""
    read_text, write_text = Path.read_text, Path.write_text
    monkeypatch.setattr(Path, "read_text", lambda self, encoding=None, errors=None: read_text(
        self, encoding=encoding or "latin-1", errors=errors))
    monkeypatch.setattr(Path, "write_text", lambda self, data, encoding=None, errors=None, newline=None: write_text(
        self, data, encoding=encoding or "latin-1", errors=errors, newline=newline))
    Claim(tmp_path, False, {"job": "café"}).save()
    assert (tmp_path / "run.json").read_bytes() == '{\n "job": "café"\n}'.encode("utf-8")
    (tmp_path / "run.json").write_bytes('{"job": "café ✓"}'.encode("utf-8"))
    assert read_run(tmp_path) == {"job": "café ✓"}


def test_a_full_disk_keeps_the_last_whole_run_json_and_leaves_no_temporary(tmp_path, monkeypatch):
    c = Claim(tmp_path, False, {"job": "j", "state": "running"})
    c.save()
    before = (tmp_path / "run.json").read_bytes()
    c.record["state"] = "finished"
    monkeypatch.setattr(Path, "write_text", no_room)  # fails before the temporary exists
    with pytest.raises(WriteFailed) as e:
        c.save()
    assert str(e.value) == f"cannot write {tmp_path / 'run.json'}: No space left on device (ENOSPC){ROOM}"
    monkeypatch.undo()
    assert (tmp_path / "run.json").read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["run.json"]


def test_read_run_of_a_missing_a_whole_and_a_broken_run_json(tmp_path):
    assert read_run(tmp_path) is None
    (tmp_path / "run.json").write_text('{"job": "j", "hash": "x"}', encoding="utf-8")
    assert read_run(tmp_path) == {"job": "j", "hash": "x"}
    (tmp_path / "run.json").write_text('{"job": ', encoding="utf-8")
    assert read_run(tmp_path) == {"job": "?", "hash": "?", "state": "unreadable"}
    (tmp_path / "run.json").unlink()
    (tmp_path / "run.json").mkdir()  # unreadable as a file
    assert read_run(tmp_path) == {"job": "?", "hash": "?", "state": "unreadable"}


# --- the wall clock -------------------------------------------------------------------------------------------------

def on_disk(folder: Path) -> dict[str, Any]:
    return json.loads((folder / "run.json").read_text(encoding="utf-8"))


def test_the_clock_saves_as_it_goes(tmp_path, perf, track):
    c = Claim(tmp_path, False, {"job": "j", "wall_parts": {}})
    perf.now = 101.25
    clock = track(WallClock(c, "cfg", interval=0.001))
    perf.now = 102.5
    expected = {"job": "j", "wall_parts": {"cfg": [1.25]}}
    deadline = time.monotonic() + 2.0  # saves come every 1 ms; 2 s of real time is a clock that does not save
    while time.monotonic() < deadline and not ((tmp_path / "run.json").exists() and on_disk(tmp_path) == expected):
        time.sleep(0.001)
    assert on_disk(tmp_path) == expected  # saved while the attempt runs
    clock.stop()


def test_an_attempt_s_wall_time_is_added_to_the_config_s_earlier_ones(tmp_path, perf, track):
    c = Claim(tmp_path, True, {"job": "j", "wall_parts": {"cfg": [1.234]}})
    clock = track(WallClock(c, "cfg", interval=60))
    assert (clock.index, clock.interval, c.record["wall_parts"]) == (1, 60, {"cfg": [1.234, 0.0]})
    assert clock._thread.name == "wallclock cfg" and clock._thread.daemon is True
    perf.now = 103.456
    assert clock.stop() == 4.69  # 1.234 + 3.46
    assert c.record == {"job": "j", "wall_parts": {"cfg": [1.234, 3.46]}} == on_disk(tmp_path)
    perf.now = 200.0
    assert clock.stop() == 4.69  # a second stop saves nothing
    assert on_disk(tmp_path)["wall_parts"] == {"cfg": [1.234, 3.46]}
    assert not clock._thread.is_alive()


def test_a_first_attempt_starts_the_wall_parts_and_saves_every_5_s_by_default(tmp_path, perf, track):
    c = Claim(tmp_path, False, {"job": "j"})
    with track(WallClock(c, "x")) as clock:
        assert clock.interval == 5.0 and clock.index == 0 and c.record["wall_parts"] == {"x": [0.0]}
        perf.now = 100.5
    assert on_disk(tmp_path) == {"job": "j", "wall_parts": {"x": [0.5]}}
    assert not clock._thread.is_alive()


def test_a_full_disk_at_the_end_is_named_unless_the_run_already_stops_with_its_own_error(tmp_path, perf,
                                                                                           monkeypatch, track):
    c = Claim(tmp_path, False, {"job": "j", "wall_parts": {}})
    monkeypatch.setattr(Path, "write_text", no_room)
    with pytest.raises(WriteFailed, match="No space left on device"):
        with track(WallClock(c, "a", interval=60)):
            pass
    with pytest.raises(KeyboardInterrupt):
        with track(WallClock(c, "b", interval=60)):
            raise KeyboardInterrupt
    with pytest.raises(ValueError, match="the run's own"):
        with track(WallClock(c, "c", interval=60)):
            raise ValueError("the run's own")
    assert os.listdir(tmp_path) == []
