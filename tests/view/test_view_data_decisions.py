"""Issue 44: the decisions of the viewer's data (`view/data.py`, `make mutation AREA=viewdata`) pinned fast, without
Ray, a browser or a task's discovery: how a document becomes the script the page loads (`script`: NaN and infinities
null at any depth, non-ASCII kept as it is, `</script>` untouched since the file is loaded by `src`, never inlined,
dates and other values as text), natural sample order (`natural`: s2 before s10), which path is which document and
the list of every path `--export` writes (`Documents`), the index's per-config counts (summary.csv's headline of a scored config;
of one not scored yet its samples, failed = every status but ok, no score), a config's table (rows in natural order, its
metric columns, each row's search text: id, reason, then the first SEARCH_CHARS characters of input, gold and
prediction), a sample's page (the row's id asked of the log, its position, its sections) and how those sections are
chosen (`task_sections`: the task's own view, else input / gold / prediction as JSON, and a view that raises named).

The run's log is a stand-in with RunLog's surface (`StandInLog`: labels, records, table, samples, text, sample, with
the same polars frames and the same `[missing text H]` for an unknown chunk), and tasks come from a stand-in registry
(`tasks` fixture, patched over `core.task.get_task`). One test reads a run folder written by hand in the real layout
through the real RunLog, so that the viewer's counts of a finished and of an unfinished config (its samples the run
stopped before count as failed) are checked where they come from.
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import polars as pl
import pytest

from emocaustics.core.errors import UsageError
from emocaustics.evallog.read import NOT_SOLVED, RunLog
from emocaustics.evallog.tables import ATTEMPT_SCHEMA, SAMPLE_SCHEMA
from emocaustics.view.data import Documents, ViewData, addresses, generic_sections, natural, script, task_sections

RUN = Path("/runs/job/20260101-000000")
TEXTS = {"h-in10": "dialogue ten", "h-gold10": "gold ten", "h-gold2": "gold two", "h-long": "x" * 5000}

# config `win` (task t-view): rows come unsorted (s10, s2, s1); s1 the run stopped before (no sample row, no score)
WIN = pl.DataFrame({
    "sample_id": ["s10", "s2", "s1"], "status": ["ok", "failed", "missing"],
    "reason": [None, "predict: no answer", "not solved"], "calls": [2, 1, None], "replica": ["r0", "r1", None],
    "score": [1.0, 0.5, None], "c_f1": [1.0, None, None], "cache_hits": [1, 0, None],
    "prompt_tokens": [100, 50, None], "generated_tokens": [10, 5, None], "seconds": [0.5, 0.25, None]})
WIN_SAMPLES = pl.DataFrame({"sample_id": ["s10", "s2"], "input": ["h-in10", None], "target": ["h-gold10", "h-gold2"],
                            "prediction": ['{"a": 1}', None], "status": ["ok", "failed"],
                            "reason": [None, "predict: no answer"]}, schema=SAMPLE_SCHEMA)
# config `orc` (a calibration row): no score columns at all; a long input, a gold chunk the texts lack
ORC = pl.DataFrame({"sample_id": ["s3"], "status": ["ok"], "reason": [None], "calls": [0], "replica": [None]},
                   schema_overrides={"replica": pl.String})
ORC_SAMPLES = pl.DataFrame({"sample_id": ["s3"], "input": ["h-long"], "target": ["h-nohash"],
                            "prediction": ["y" * 4001], "status": ["ok"], "reason": [None]}, schema=SAMPLE_SCHEMA)
# config `staged`: only staged lines so far, no record in configs.json; its one sample failed, and has no gold
STAGED = pl.DataFrame({"sample_id": ["a"], "status": ["failed"], "reason": ["boom"]})
STAGED_SAMPLES = pl.DataFrame({"sample_id": ["a"], "input": ["h-in10"], "target": [None], "prediction": ["p"],
                               "status": ["failed"], "reason": ["boom"]}, schema=SAMPLE_SCHEMA)  # no gold


class StandInLog:
    """RunLog's surface as ViewData reads it; counts which tables it was asked for and which samples."""

    def __init__(self) -> None:
        self.run_dir = RUN
        self.records = {"win": {"run": "win", "task": "t-view", "method": "window", "model": "m1", "kind": "model"},
                        "orc": {"run": "orc", "task": "t-plain", "method": "oracle", "model": None,
                                "kind": "calibration"}}
        self.frames = {"win": WIN, "orc": ORC, "staged": STAGED}
        self.inputs = {"win": WIN_SAMPLES, "orc": ORC_SAMPLES, "staged": STAGED_SAMPLES}
        # scores.parquet of the scored configs (win, orc): the index's figures are its headline, as summary.csv's
        self.scores = pl.DataFrame({"run": ["win"] * 3 + ["orc"], "task": ["t-view"] * 3 + ["t-plain"],
                                    "sample_id": ["s10", "s2", "s1", "s3"], "score": [1.0, 0.5, None, None],
                                    "failed": [False, True, True, False]})
        self.tables_read: list[str] = []
        self.asked: list[tuple[str, str]] = []

    def labels(self) -> list[str]:
        return ["win", "orc", "staged"]  # the log's order, not sorted

    def table(self, label: str) -> pl.DataFrame:
        self.tables_read.append(label)
        return self.frames[label]

    def samples(self, label: str) -> pl.DataFrame:
        return self.inputs[label]

    def text(self, refs: list[str] | None) -> str | None:
        if refs is None:
            return None
        return "".join(TEXTS.get(h, f"[missing text {h}]") for h in refs)

    def sample(self, label: str, sample_id: str) -> dict:
        self.asked.append((label, sample_id))
        return {"config": label, "sample_id": sample_id, "task": self.records.get(label, {}).get("task"),
                "input": {"q": sample_id}, "target": {"gold": 1}, "prediction": {"pred": 2},
                "items": [{"item": 1, "outcome": "tp"}]}


class _View:
    def __init__(self, name: str, view_sample) -> None:
        self.name, self.report = name, SimpleNamespace(view_sample=view_sample)


def _story(input, target, prediction, items):
    return [{"title": "Story", "kind": "text", "text": f"{input}|{target}|{prediction}|{items}"}]


def _broken(input, target, prediction, items):
    raise ValueError("no gold spans")


@pytest.fixture
def tasks(monkeypatch):
    """A registry of three tasks: t-view has its own sample page, t-plain's `view_sample` returns None (the generic
    page), t-bug's raises; any other name is a task of a plug-in not installed here (UsageError, as get_task says)."""
    known = {"t-view": _View("t-view", _story), "t-plain": _View("t-plain", lambda *a: None),
             "t-bug": _View("t-bug", _broken)}

    def get_task(name):
        if name not in known:
            raise UsageError(f"unknown task {name!r}")
        return known[name]

    monkeypatch.setattr("emocaustics.core.task.get_task", get_task)
    return known


# -- the script the page loads -----------------------------------------------------------------------------------

def _data(doc: str) -> object:
    return json.loads(doc[doc.index(",") + 1:-len(");\n")])


def test_json_has_no_nan_or_infinity_so_they_become_null_at_any_depth_and_keys_become_text():
    got = _data(script("c/0", {1: [float("-inf"), 2.5, "x", None], "n": {"deep": (float("nan"), float("inf"), 3)},
                               "ok": True, "np": np.float64("nan")}))
    assert got == {"1": [None, 2.5, "x", None], "n": {"deep": [None, None, 3]}, "ok": True, "np": None}
    assert [_data(script("c/0", v)) for v in (float("nan"), 0.0, "nan", 7, (1, 2))] == [None, 0.0, "nan", 7, [1, 2]]


def test_a_document_is_a_script_handing_the_page_its_path_and_data_with_text_kept_as_written():
    data = {"text": "情感 </script> \"q\"", "score": float("nan"), "day": datetime.date(2026, 1, 2),
            "spans": (1, float("inf")), 3: None}
    assert script("s/0/12", data) == ('window.__ev("s/0/12",{"text":"情感 </script> \\"q\\"","score":null,'
                                      '"day":"2026-01-02","spans":[1,null],"3":null});\n')
    assert script("index", []) == 'window.__ev("index",[]);\n'


# -- natural order -----------------------------------------------------------------------------------------------

def test_natural_order_reads_digit_runs_as_numbers():
    assert natural("s10") == ["s", 10, ""]
    assert natural("ab12cd3") == ["ab", 12, "cd", 3, ""]
    assert natural("12") == ["", 12, ""] and natural("abc") == ["abc"]
    assert sorted(["s10", "b", "s2", "10", "s1b", "s1", "2"], key=natural) == ["2", "10", "b", "s1", "s1b", "s2",
                                                                                "s10"]


# -- documents by path -------------------------------------------------------------------------------------------

class Pages(Documents):
    """A view of `sizes[i]` samples in list i, each document naming what it is."""

    def __init__(self, sizes: list[int]) -> None:
        self.sizes = sizes

    def index(self):
        return "the index"

    def table(self, i: int):
        return {"i": i, "rows": [{"sample_id": f"s{j}"} for j in range(self.sizes[i])]}

    def sample(self, i: int, j: int):
        return ("sample", i, j)

    def count(self) -> int:
        return len(self.sizes)


class XPages(Pages):
    list_prefix = sample_prefix = "x"  # as report.across names its groups and their samples


def test_a_path_names_the_index_a_list_or_a_sample_and_anything_else_is_a_key_error():
    pages = Pages([1, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3])
    assert pages.document("index") == "the index"
    assert pages.document("c/1") == {"i": 1, "rows": [{"sample_id": "s0"}, {"sample_id": "s1"}]}
    assert pages.document("c/12")["i"] == 12
    assert pages.document("s/1/12") == ("sample", 1, 12) and pages.document("s/12/0") == ("sample", 12, 0)
    for bad in ["", "index/", "indexx", "c/", "c/1/2", "s/1", "s/1/2/3", "x/1", "C/1", " index", "c/-1", "s/a/1"]:
        with pytest.raises(KeyError) as exc:
            pages.document(bad)
        assert exc.value.args == (bad,)
    assert XPages([1]).document("x/0") == {"i": 0, "rows": [{"sample_id": "s0"}]}
    assert XPages([1]).document("x/0/3") == ("sample", 0, 3)


def test_export_writes_the_index_then_each_list_followed_by_its_samples():
    assert Pages([2, 0, 1]).paths() == ["index", "c/0", "s/0/0", "s/0/1", "c/1", "c/2", "s/2/0"]
    assert XPages([1]).paths() == ["index", "x/0", "x/0/0"]
    assert Pages([]).paths() == ["index"]


# -- one run's view ----------------------------------------------------------------------------------------------

def test_the_index_counts_each_configs_samples_failures_and_mean_score_in_the_logs_order():
    log = StandInLog()
    assert ViewData(log).index() == {"run": "20260101-000000", "path": "/runs/job/20260101-000000", "configs": [
        # scored: summary.csv's headline (a failure counts 0, an unscored sample is out of the mean); not scored
        # (staged): failed is every status but ok (a missing sample is not a success), no score
        {"i": 0, "label": "win", "task": "t-view", "method": "window", "model": "m1", "kind": "model",
         "samples": 3, "failed": 2, "score": 0.5},
        {"i": 1, "label": "orc", "task": "t-plain", "method": "oracle", "model": None, "kind": "calibration",
         "samples": 1, "failed": 0, "score": None},
        {"i": 2, "label": "staged", "task": None, "method": None, "model": None, "kind": None,
         "samples": 1, "failed": 1, "score": None}]}
    assert ViewData(log).count() == 3


def test_a_configs_table_lists_its_samples_in_natural_order_with_metrics_and_search_text():
    log = StandInLog()
    view = ViewData(log)
    assert view.table(0) == {"i": 0, "label": "win", "task": "t-view", "metrics": [
        "calls", "score", "c_f1", "cache_hits", "prompt_tokens", "generated_tokens", "seconds"], "rows": [
        {"sample_id": "s1", "status": "missing", "reason": "not solved", "calls": None, "replica": None,
         "score": None, "c_f1": None, "cache_hits": None, "prompt_tokens": None, "generated_tokens": None,
         "seconds": None, "search": "s1 not solved"},  # no sample row: id and reason only
        {"sample_id": "s2", "status": "failed", "reason": "predict: no answer", "calls": 1, "replica": "r1",
         "score": 0.5, "c_f1": None, "cache_hits": 0, "prompt_tokens": 50, "generated_tokens": 5, "seconds": 0.25,
         "search": "s2 predict: no answer  gold two "},  # no input, no prediction: empty parts, still joined
        {"sample_id": "s10", "status": "ok", "reason": None, "calls": 2, "replica": "r0", "score": 1.0,
         "c_f1": 1.0, "cache_hits": 1, "prompt_tokens": 100, "generated_tokens": 10, "seconds": 0.5,
         "search": 's10 dialogue ten gold ten {"a": 1}'}]}
    # each part cut to SEARCH_CHARS (4000); a chunk the texts lack is named, as RunLog.text names it
    assert view.table(1) == {"i": 1, "label": "orc", "task": "t-plain", "metrics": ["calls"], "rows": [
        {"sample_id": "s3", "status": "ok", "reason": None, "calls": 0, "replica": None,
         "search": "s3 " + "x" * 4000 + " [missing text h-nohash] " + "y" * 4000}]}
    assert view.table(2) == {"i": 2, "label": "staged", "task": None, "metrics": [], "rows": [
        {"sample_id": "a", "status": "failed", "reason": "boom", "search": "a boom dialogue ten  p"}]}
    assert view.document("c/2") is view.table(2)  # built once, kept
    view.index()
    assert log.tables_read == ["win", "orc", "staged"]


def test_a_sample_page_is_the_logs_sample_at_its_sorted_position_with_its_tasks_sections(tasks):
    log = StandInLog()
    view = ViewData(log)
    got = view.document("s/0/2")
    assert log.asked == [("win", "s10")]  # position 2 in natural order (s1, s2, s10), not in the log's
    assert got == {"config": "win", "sample_id": "s10", "task": "t-view", "input": {"q": "s10"},
                   "target": {"gold": 1}, "prediction": {"pred": 2}, "items": [{"item": 1, "outcome": "tp"}],
                   "j": 2, "i": 0, "sections": [{"title": "Story", "kind": "text",
                                                 "text": "{'q': 's10'}|{'gold': 1}|{'pred': 2}|"
                                                         "[{'item': 1, 'outcome': 'tp'}]"}]}
    got = view.sample(1, 0)
    assert log.asked[-1] == ("orc", "s3") and (got["i"], got["j"]) == (1, 0)
    assert got["sections"] == generic_sections(got)


def hand_written_run(tmp_path: Path, inputs: list | None = None) -> Path:
    """A run folder in the real layout, written by hand: a finished config `done` (3 samples, s2 failed) and one the
    run was killed in, `cut` (3 planned, only s1 tried)."""
    run = tmp_path / "job" / "20260101-000000"
    for label, samples in (("done", ["s1", "s2", "s10"]), ("cut", ["s1", "s2", "s3"])):
        (run / "predictions" / label).mkdir(parents=True)
        (run / "predictions" / label / "provenance.json").write_text(json.dumps(
            {"task": "t-plain", "model": "m1", "options": {"method": label}, "samples": {s: "f" for s in samples}}))
    for sub in ("samples", "attempts", "texts"):
        (run / "evallog" / sub).mkdir(parents=True)
    pl.DataFrame({"sample_id": ["s10", "s2", "s1"], "input": inputs or [None] * 3, "target": [None] * 3,
                  "prediction": ["1", None, "1"], "status": ["ok", "failed", "ok"],
                  "reason": [None, "predict: no answer", None]},
                 schema=SAMPLE_SCHEMA).write_parquet(run / "evallog" / "samples" / "done.parquet")
    pl.DataFrame([{"sample_id": "s1", "attempt": "a1", "finished": 1.0, "ok": True, "calls": 1}],
                 schema=ATTEMPT_SCHEMA).write_parquet(run / "evallog" / "attempts" / "cut.parquet")
    return run


def test_the_viewers_counts_of_a_hand_written_run_folder_match_its_samples(tmp_path):
    """`done` scored 1, 0, 0.5; `cut` killed: the viewer counts cut's two untried samples as failed, and has no score
    for it."""
    run = hand_written_run(tmp_path)
    pl.DataFrame({"run": ["done"] * 3, "task": ["t-plain"] * 3, "sample_id": ["s1", "s2", "s10"],
                  "score": [1.0, 0.0, 0.5], "failed": [False, True, False],
                  "c_acc": [1.0, 0.0, 1.0]}).write_parquet(run / "scores.parquet")
    view = ViewData(RunLog(run))
    assert view.index()["configs"] == [
        {"i": 0, "label": "cut", "task": "t-plain", "method": "cut", "model": "m1", "kind": None,
         "samples": 3, "failed": 2, "score": None},
        {"i": 1, "label": "done", "task": "t-plain", "method": "done", "model": "m1", "kind": None,
         "samples": 3, "failed": 1, "score": 0.5}]
    assert [(r["sample_id"], r["status"], r["reason"]) for r in view.table(0)["rows"]] == [
        ("s1", "ok", None), ("s2", "missing", NOT_SOLVED), ("s3", "missing", NOT_SOLVED)]
    assert view.table(1)["metrics"] == ["calls", "score", "c_acc"]
    assert view.paths() == ["index", "c/0", "s/0/0", "s/0/1", "s/0/2", "c/1", "s/1/0", "s/1/1", "s/1/2"]


def test_the_links_are_the_viewers_numbers_without_its_search_text(tmp_path, monkeypatch):
    """report.html's links are the viewer's own numbers (`view.data.addresses`): configs in the log's order, samples
    in natural id order, as `ViewData` numbers its lists and pages, learned without building those lists (each
    sample's search text: its input, gold and prediction read back from the log's texts)."""
    run = tmp_path / "job" / "20260101-000000"
    assert addresses(run) == ({}, {})  # no eval log: no links
    run = hand_written_run(tmp_path, inputs=["h1", "h2", "h3"])
    view = ViewData(RunLog(run))
    numbers = ({label: i for i, label in enumerate(view.labels)},
               {(view.table(i)["label"], r["sample_id"]): (i, j) for i in range(view.count())
                for j, r in enumerate(view.table(i)["rows"])})

    def read_back(*args):
        raise AssertionError("the links read the samples' texts back")

    monkeypatch.setattr(RunLog, "text", read_back)
    assert addresses(run) == numbers == ({"cut": 0, "done": 1}, {
        ("cut", "s1"): (0, 0), ("cut", "s2"): (0, 1), ("cut", "s3"): (0, 2),
        ("done", "s1"): (1, 0), ("done", "s2"): (1, 1), ("done", "s10"): (1, 2)})


# -- a sample's sections -----------------------------------------------------------------------------------------

SAMPLE = {"input": {"dialogue": ["hi"]}, "target": [1], "prediction": None, "items": [{"k": "v"}]}
GENERIC = [{"title": "Input", "kind": "json", "value": {"dialogue": ["hi"]}},
           {"title": "Gold", "kind": "json", "value": [1], "side": "gold"},
           {"title": "Prediction", "kind": "json", "value": None, "side": "prediction"}]


def test_without_a_task_view_the_sample_shows_input_gold_and_prediction_as_json(tasks):
    assert generic_sections(SAMPLE) == GENERIC
    assert task_sections({**SAMPLE, "task": None}) == GENERIC
    assert task_sections(SAMPLE) == GENERIC  # no task key at all
    assert task_sections({**SAMPLE, "task": "plugin-not-here"}) == GENERIC
    assert task_sections({**SAMPLE, "task": "t-plain"}) == GENERIC  # its view_sample says None


def test_a_tasks_view_gets_input_gold_prediction_and_items_in_that_order(tasks):
    assert task_sections({**SAMPLE, "task": "t-view"}) == [
        {"title": "Story", "kind": "text", "text": "{'dialogue': ['hi']}|[1]|None|[{'k': 'v'}]"}]


def test_a_task_view_that_raises_is_named_above_the_generic_view(tasks):
    assert task_sections({**SAMPLE, "task": "t-bug"}) == [
        {"title": "task view failed", "kind": "text", "text": "ValueError: no gold spans"}, *GENERIC]
