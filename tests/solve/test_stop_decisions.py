"""The scheduler's stop rules, pinned without Ray or a model (issue 44, the `stops` mutation area): a config's
per-sample limits and its time limit (`solve.plan.Limits`), and the typed stops and failures a user reads
(`core.errors`): which exit status each is, and every word of the one line that names it."""

from __future__ import annotations

import pytest

from emocaustics.core import errors
from emocaustics.core.errors import (BudgetReached, DataError, EndpointDown, SamplesFailed, ServiceGone, Stop,
                                     WriteFailed, shorten)
from emocaustics.solve import plan
from emocaustics.core.task import Failure
from emocaustics.solve.plan import LIMIT_STEPS, Limits, Row


class Clock:
    """Stands in for `time.monotonic` as solve/plan.py reads it."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    got = Clock()
    monkeypatch.setattr(plan.time, "monotonic", got)
    return got


def test_a_config_time_limit_counts_from_the_config_start(clock: Clock) -> None:
    limits = Limits(tokens=5, seconds=2.5, config=30.0)
    assert limits.deadline is None and limits.any
    started = limits.started()
    assert started == Limits(tokens=5, seconds=2.5, config=30.0, deadline=1030.0)
    assert limits.deadline is None  # the config's own limits are left as they were (frozen)
    assert Limits(tokens=5).started() == Limits(tokens=5, deadline=None)  # no config limit: no deadline


def test_what_travels_with_a_sample_is_each_limit_and_the_time_left(clock: Clock) -> None:
    started = Limits(tokens=7, seconds=1.5, config=10.0).started()
    clock.now += 4.0
    assert started.of_sample() == {"tokens": 7, "seconds": 1.5, "left": 6.0, "config": 10.0}
    assert Limits(tokens=7).of_sample() == {"tokens": 7, "seconds": None, "left": None, "config": None}


def test_a_sample_is_late_from_the_deadline_on_and_not_a_moment_before(clock: Clock) -> None:
    started = Limits(config=2.5).started()
    clock.now += 2.4999
    assert started.late() is None
    clock.now = started.deadline  # at the deadline: late
    assert started.late() == "config time_limit: 2.5 s reached before the sample started"
    clock.now += 100
    assert started.late() == "config time_limit: 2.5 s reached before the sample started"
    assert Limits(tokens=3).started().late() is None  # no config limit: never late


def test_any_limit_set_counts_and_none_is_none() -> None:
    assert not Limits().any
    assert Limits(tokens=1).any and Limits(seconds=0.5).any and Limits(config=9).any


def test_a_failure_row_and_the_limit_steps() -> None:
    assert Row("s1", failure=Failure("token_limit", "over 5 tokens")).to_json() == {"id": "s1", "ok": False, "step": "token_limit",
                                                               "reason": "over 5 tokens", "stats": {}}
    assert LIMIT_STEPS == ("token_limit", "time_limit")


@pytest.mark.parametrize("text, limit, shown", [
    ("short", 80, "short"),
    ("x" * 80, 80, "x" * 80),  # at the limit: whole
    ("a" * 30 + "b" * 31 + "c" * 30, 80, "a" * 30 + "...(91 characters)..." + "c" * 30),
    ("0123456789" * 5, 30, "01234...(50 characters)...56789"),
    ("0123456789" * 5, 31, "01234...(50 characters)...456789"),  # an odd share: the end keeps the extra one
    (12345, 80, "12345"),
])
def test_shorten_keeps_both_ends_of_a_long_echo(text, limit, shown) -> None:
    assert shorten(text, limit) == shown


def test_shorten_is_80_characters_by_default() -> None:
    assert shorten("y" * 80) == "y" * 80
    assert shorten("y" * 81) == "y" * 30 + "...(81 characters)..." + "y" * 30


def test_a_data_error_names_file_record_and_field_whichever_are_known() -> None:
    full = DataError("not a number", file="data.csv", record=3, field="score")
    assert str(full) == "data.csv, record 3, field 'score': not a number"
    assert (full.file, full.record, full.field, full.detail) == ("data.csv", 3, "score", "not a number")
    assert str(DataError("empty", record=0)) == "record 0: empty"  # record 0 is a record
    assert str(DataError("empty", field="text")) == "field 'text': empty"
    assert str(DataError("bad")) == "bad"
    assert isinstance(full, errors.UsageError)


def test_every_stop_says_when_to_continue_and_keeps_its_type_and_exit_status() -> None:
    assert (Stop.exit_code, EndpointDown.exit_code, ServiceGone.exit_code, BudgetReached.exit_code) == (4, 4, 4, 6)
    cases = [(EndpointDown, "when the endpoint is back"), (ServiceGone, "once the service is served again"),
             (BudgetReached, "to continue (with a new budget for the rest)"), (Stop, "to continue")]
    for kind, hint in cases:
        got = kind("openai:m@http://h/v1: endpoint down").continued("config a", "emocaustics run j.yaml --resume")
        assert type(got) is kind
        assert str(got) == (f"config a: openai:m@http://h/v1: endpoint down; finished samples are kept; {hint}: "
                            "emocaustics run j.yaml --resume")


def test_a_write_failure_names_the_path_and_when_the_resume_goes_on() -> None:
    plain = WriteFailed("cannot write /r/x: no space")
    assert plain.exit_code == 7 and (plain.what, plain.when) == ("cannot write /r/x: no space", "once there is room")
    assert str(plain) == ("cannot write /r/x: no space; what was written is kept, and `--resume` continues once "
                          "there is room")
    later = WriteFailed("cannot write /r/x: read-only", "once it is writable")
    got = later.continued("config a", "emocaustics run j.yaml --resume")
    assert type(got) is WriteFailed and (got.what, got.when) == (later.what, later.when)
    assert str(got) == ("config a: cannot write /r/x: read-only; what was written is kept; once it is writable, to "
                        "continue: emocaustics run j.yaml --resume")


def test_samples_failed_counts_and_says_how_to_exit_0() -> None:
    got = SamplesFailed(2, 9, "config a")
    assert (got.count, got.total, got.exit_code) == (2, 9, 3)
    assert str(got) == "2 of 9 samples failed (config a); exit status 3 (pass --allow-failures to exit 0 when " \
                       "samples fail)"
    assert str(SamplesFailed(1, 1)) == "1 of 1 samples failed; exit status 3 (pass --allow-failures to exit 0 " \
                                       "when samples fail)"
