"""report.html's links are the viewer's own numbers (`view.data.addresses`): configs in the log's order, samples in
natural id order, as `ViewData` numbers its lists and pages, learned without building those lists (each sample's
search text: its input, gold and prediction read back from the log's texts). A run folder written by hand in the real
layout, read through the real RunLog; no Ray, no task."""

from __future__ import annotations

import json

import polars as pl

from emocaustics.evallog.read import RunLog
from emocaustics.evallog.tables import ATTEMPT_SCHEMA, SAMPLE_SCHEMA
from emocaustics.view.data import ViewData, addresses


def test_the_links_are_the_viewers_numbers_without_its_search_text(tmp_path, monkeypatch):
    run = tmp_path / "job" / "20260101-000000"
    assert addresses(run) == ({}, {})  # no eval log: no links
    for label, samples in (("done", ["s1", "s2", "s10"]), ("cut", ["s1", "s2", "s3"])):
        (run / "predictions" / label).mkdir(parents=True)
        (run / "predictions" / label / "provenance.json").write_text(json.dumps(
            {"task": "t-plain", "model": "m1", "options": {"method": label}, "samples": {s: "f" for s in samples}}))
    for sub in ("samples", "attempts", "texts"):
        (run / "evallog" / sub).mkdir(parents=True)
    pl.DataFrame({"sample_id": ["s10", "s2", "s1"], "input": ["h1", "h2", "h3"], "target": [None] * 3,
                  "prediction": ["1", None, "1"], "status": ["ok", "failed", "ok"], "reason": [None, "no", None]},
                 schema=SAMPLE_SCHEMA).write_parquet(run / "evallog" / "samples" / "done.parquet")
    pl.DataFrame([{"sample_id": "s1", "attempt": "a1", "finished": 1.0, "ok": True, "calls": 1}],
                 schema=ATTEMPT_SCHEMA).write_parquet(run / "evallog" / "attempts" / "cut.parquet")
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
