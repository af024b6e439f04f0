"""Issue 53 (14, 16): `compare` pairs a sample by its input and its gold (a corrected gold answer is not a model
difference), reads a run written before the gold was recorded and says what it could not check; the viewer across
runs speaks of `view`, not of compare. Hand-written run folders, no engine."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import polars as pl
import pytest

from emocaustics.core.errors import UsageError
from emocaustics.core.provenance import record
from emocaustics.core.records import Sample
from emocaustics.report.compare import compare_runs, describe
from emocaustics.report.tables import SCORE_COLUMNS

IDS = [f"s{i}" for i in range(8)]
TASK = SimpleNamespace(name="t", prompts_version="p", data=SimpleNamespace(fingerprint=lambda s: f"in-{s.id}"))


def _run(folder: Path, scores: list[float], golds: dict[str, str], with_gold: bool = True) -> Path:
    """A run folder: config `m` of task t scored `scores`, its provenance made by `provenance.record` from samples
    whose gold is `golds` (without the `gold` key when not `with_gold`: an older run)."""
    folder.mkdir(parents=True)
    rows = [{"run": "m", "task": "t", "method": "llm", "model": "x", "kind": "model", "sample_id": sid,
             "weight": 1.0, "score": v, "failed": False, "status": "ok", "reason": None, "llm_calls": 1,
             "cache_hits": 0, "prompt_tokens": 1, "generated_tokens": 1, "seconds": 0.0}
            for sid, v in zip(IDS, scores)]
    pl.DataFrame(rows, schema_overrides=SCORE_COLUMNS).write_parquet(folder / "scores.parquet")
    loaded = SimpleNamespace(samples=[Sample(sid, {"q": sid}, golds[sid]) for sid in IDS], info={})
    rec = record(TASK, loaded, dataset={}, options=SimpleNamespace(method="llm", model_dump=lambda mode: {}),
                 model="x")
    if not with_gold:
        rec.pop("gold")
    (folder / "predictions" / "m").mkdir(parents=True)
    (folder / "predictions" / "m" / "provenance.json").write_text(json.dumps(rec))
    return folder


def test_a_sample_whose_gold_changed_is_not_paired(tmp_path):
    gold = {sid: "A" for sid in IDS}
    fixed = {**gold, "s0": "B", "s1": "B"}  # the gold of s0 and s1 corrected between the runs
    a = _run(tmp_path / "a" / "job" / "1", [1.0] * 8, gold)
    b = _run(tmp_path / "b" / "job" / "1", [0.0, 0.0] + [1.0] * 6, fixed)  # scored 0 against the corrected gold
    got = compare_runs([a, b]).pairs.row(0, named=True)
    assert (got["n_common"], got["n_only_a"], got["n_only_b"], got["diff"]) == (6, 2, 2, 0.0)
    assert "without checking their gold" not in describe(compare_runs([a, b]))


def test_a_run_without_gold_fingerprints_is_read_and_named_as_unchecked(tmp_path):
    gold = {sid: "A" for sid in IDS}
    a = _run(tmp_path / "a" / "job" / "1", [1.0] * 8, gold)
    old = _run(tmp_path / "old" / "job" / "1", [0.0, 0.0] + [1.0] * 6, {**gold, "s0": "B"}, with_gold=False)
    result = compare_runs([a, old])
    assert result.pairs.row(0, named=True)["n_common"] == 8  # paired by input alone: nothing to tell them apart
    assert result.unchecked == ("old/job/1: m",)
    assert ("Samples paired without checking their gold (a provenance.json written before it recorded the gold): "
            "old/job/1: m.\n") in describe(result)


def test_the_viewer_across_runs_names_itself_in_its_errors(tmp_path):
    from emocaustics.report.across import Across

    run = _run(tmp_path / "a" / "job" / "1", [1.0] * 8, {sid: "A" for sid in IDS})
    (run / "evallog").mkdir()
    with pytest.raises(UsageError) as err:
        Across([run, run])
    assert str(err.value) == f"view: run folder {run} is given twice; view different runs"
    with pytest.raises(UsageError, match="^compare: run folder .* is given twice; compare different runs$"):
        compare_runs([run, run])
