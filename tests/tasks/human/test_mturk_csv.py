"""A raw MTurk batch-results CSV as a second ratings input (issue 46): it becomes the normative structure in memory,
so every table equals the one the normative JSON gives."""

from __future__ import annotations

import csv
import json

import pytest

from emocaustics.core.errors import UsageError
from emocaustics.tasks.human.data import HitsError, UnknownSystem
from emocaustics.tasks.human.mturk import read_ratings as read_hits
from tests.fakes.mturk_csv import write_mturk_csv
from emocaustics.tasks.human.task import HumanDataset, HumanTask

from .test_cli_task import run_cli

HEADER = ("HITId,HITTypeId,Title,Description,Keywords,Reward,AssignmentId,WorkerId,AssignmentStatus,"
          "RequesterFeedback,WorkTimeInSeconds,Input.u0,Input.u1,Input.u2,Input.u3,Input.u4,Input.u5,"
          "Answer.taskAnswers,Approve,Reject")


def answers(tasks, scores, feedback="nice"):
    ans = {"feedback": feedback}
    for i, (t, s) in enumerate(zip(tasks, scores)):
        ans.update({f"dialogue{i}": f"Human: hi\nBot: hello {i}", f"seed{i}": str(7 * i), f"task{i}": t,
                    f"score{i}": s, f"topic{i}": "pets", f"opinion{i}": "like"})
    return json.dumps([ans])


def row(hit, assignment, worker, seconds, cell):
    return [hit, "3TYPE", "Chat with a bot and rate it", "Talk and rate", "chat,rate", "$3.00", assignment, worker,
            "Approved", "", str(seconds), "alpha", "beta", "qc", "", "", "", cell, "", ""]


def write(path, rows, header=HEADER):
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(header.split(","))
        w.writerows(rows)
    return path


@pytest.fixture
def meta_file(kit, tmp_path):
    p = tmp_path / "meta.json"
    p.write_text(json.dumps(kit.main_set()))  # a hits_data JSON: its metadata (fun, dull, clear) is reused
    return p


def two_rows():
    return [row("H1", "A1", "P", 600, answers(["alpha", "beta", "qc"], ["80#30#90#", "60#50#70#", "10#90#20#"])),
            row("H1", "A3", "F", 360, answers(["alpha", "beta", "qc"], ["20#80#30#", "40#60#50#", "90#10#95#"]))]


def test_two_row_fixture_loads(meta_file, tmp_path, kit):
    hits = read_hits(write(tmp_path / "batch.csv", two_rows()), meta_file)
    assert [(a.hit, a.assignment, a.worker, a.duration_s) for a in hits.assignments] == [
        ("H1", "A1", "P", 600.0), ("H1", "A3", "F", 360.0)]
    assert hits.assignments[0].result[2].model == "qc"
    assert dict(hits.assignments[0].result[0].scores) == {"fun": 80, "dull": 30, "clear": 90}
    assert hits.assignments[1].feedback == "nice"
    # the task's dataset option takes the .csv with its metadata file
    task = HumanTask()
    from emocaustics.core.task import parse_options
    loaded = task.load(HumanDataset(data=str(tmp_path / "batch.csv"), metadata=str(meta_file)),
                       parse_options(task, {"method": "process"}))
    assert [s.id for s in loaded.samples] == ["A1", "A3"]


def test_round2_repeated_system_replaces_earlier(meta_file, tmp_path):
    rows = [row("H1", "A1", "P", 600, answers(["alpha", "alpha", "qc"], ["1#2#3#", "4#5#6#", "7#8#9#"]))]
    hits = read_hits(write(tmp_path / "b.csv", rows), meta_file)
    assert [(r.model, r.scores["fun"]) for r in hits.assignments[0].result] == [("alpha", 4), ("qc", 7)]


def test_bad_inputs_are_named(meta_file, tmp_path):
    def err(rows, header=HEADER, exc=HitsError):
        path = write(tmp_path / "bad.csv", rows, header)
        with pytest.raises(exc) as info:
            read_hits(path, meta_file)
        assert str(path) in str(info.value)
        return info.value

    e = err(two_rows(), header=HEADER.replace("WorkerId", "Worker"))
    assert e.field == "WorkerId" and "no column" in str(e)
    rows = two_rows()
    rows[1][17] = "{not json"
    e = err(rows)
    assert (e.record, e.field) == ("line 3", "Answer.taskAnswers") and "not JSON" in str(e)
    rows = two_rows()
    rows[1][17] = answers(["alpha", "beta", "qc"], ["20#80#30#", "40#60#", "90#10#95#"])
    e = err(rows)
    assert (e.record, e.field) == ("line 3", "Answer.taskAnswers.score1") and "holds 2 ratings" in str(e)
    rows[1][17] = answers(["alpha", "beta", "qc"], ["20#80#30#", "40#x#50#", "90#10#95#"])
    e = err(rows)
    assert e.field == "Answer.taskAnswers.score1" and "'dull' is not a number" in str(e)
    rows[1][17] = answers(["alpha", "gamma", "qc"], ["20#80#30#", "40#60#50#", "90#10#95#"])
    e = err(rows, exc=UnknownSystem)
    assert (e.record, e.field) == ("line 3", "Answer.taskAnswers.task1") and "'gamma'" in str(e)
    with pytest.raises(UsageError, match="--metadata"):
        read_hits(write(tmp_path / "ok.csv", two_rows()))


def test_round_trip_equals_the_json(humaneval_root, tmp_path, capsys):
    src = humaneval_root / "hits_data_FreeTopicRound1.json"
    batch = write_mturk_csv(json.loads(src.read_text()), tmp_path / "Combined_Batches.csv")
    assert run_cli("human", "process", str(src), "--out", str(tmp_path / "json")) == 0
    assert run_cli("human", "process", str(batch), "--metadata", str(src), "--out", str(tmp_path / "csv")) == 0
    tables = sorted(p.name for p in (tmp_path / "json").glob("*.csv"))
    assert {"system_scores.csv", "passrate.csv", "sig_test.csv", "rater_agreement.csv"} <= set(tables)
    for name in tables + sorted(p.name for p in (tmp_path / "json").glob("*_workers.json")):
        assert (tmp_path / "csv" / name).read_bytes() == (tmp_path / "json" / name).read_bytes(), name
