"""Per-emotion tables and both subtasks in the job's common outputs: each conversation's per-emotion counts travel in
scores.parquet, and the report rebuilds the official figures and per-emotion tables from them, bit-identical to the
scorer's own (also after `emocaustics report`). A calibration-only job on hand-built files (no engine), and the whole
published test set (skipped without the data)."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
import yaml

from emocaustics.core.task import ScoreContext, parse_options
from emocaustics.jobs.runner import rebuild_report, run_job
from emocaustics.jobs.spec import load_job
from emocaustics.tasks.ecpe import data
from emocaustics.tasks.ecpe import official as O
from emocaustics.tasks.ecpe.report import config_figures
from emocaustics.tasks.ecpe.scoring import count_columns, figures_from_sums
from emocaustics.tasks.ecpe.task import EcpeTask
from tasks.ecpe.conftest import EMOTIONS, TEXTS, gold_conv

# Three conversations: 1375 sadness <- 1, joy <- 3; 1376 anger <- 1 and surprise <- 2 (its own utterance);
# 1377 has no pair at all (its per-conversation F1 is 0 / 0: unscored, never a 0 for the oracle).
S1 = {1375: [["2_sadness", "1_I lost my job"], ["3_joy", "3_I got a new one !"]],
      1376: [["2_anger", "1_lost my job"], ["2_surprise", "2_Oh no"]],
      1377: []}
S2 = {cid: [[e, c.split("_")[0]] for e, c in pairs] for cid, pairs in S1.items()}
LABELS = {1375: EMOTIONS, 1376: ["neutral", "anger", "neutral"], 1377: ["neutral"] * 3}


def _write_data(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for st, pairs in ((1, S1), (2, S2)):
        records = [gold_conv(cid, TEXTS, LABELS[cid], pairs[cid]) for cid in pairs]
        # utterance 2 of 1376 holds both anger and surprise in the pairs; the label says anger
        (root / data.FILES[st]).write_text(json.dumps(records), encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def job_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ecpe_report")
    root = _write_data(tmp / "ecac")
    spec = {"name": "ecpe-report", "dataset": {"ecpe": {"data": str(root)}},
            "runs": [{"task": "ecpe", "options": {"method": "oracle"}},
                     {"task": "ecpe", "options": {"method": "baseline"}},
                     {"task": "ecpe", "options": {"method": "baseline", "baseline_emotion": "sadness"}},
                     {"task": "ecpe", "options": {"method": "oracle", "subtask": 2}}],
            "scoring": {"judge": "none"}, "output": str(tmp / "runs")}
    path = tmp / "job.yaml"
    path.write_text(yaml.safe_dump(spec), encoding="utf-8")
    run_dir = run_job(load_job(path), out=str(tmp / "run"))
    return run_dir, root


def test_scores_carry_the_per_emotion_counts_and_the_per_conversation_f1(job_run):
    run_dir, _ = job_run
    scores = pl.read_parquet(run_dir / "scores.parquet")
    assert set(count_columns(1)) | set(count_columns(2)) <= set(scores.columns)
    oracle = scores.filter(pl.col("run") == "ecpe_oracle_subtask=both").sort("sample_id")
    # the per-sample score is the conversation's strict micro F1; 1377 (no pair, none predicted) is unscored
    assert oracle["status"].to_list() == ["ok", "ok", "unscored"]
    assert [v is None or 0.99999999 < v < 1 for v in oracle["score"].to_list()] == [True] * 3
    assert oracle["score"][2] is None and not oracle["failed"].any()
    # the counts of 1376: anger and surprise, one gold pair each, both found
    row = oracle.filter(pl.col("sample_id") == "1376").to_dicts()[0]
    assert (row["ecpe_s1_anger_gold"], row["ecpe_s1_anger_correct"], row["ecpe_s1_surprise_gold_spans"]) == (1, 1, 1)
    assert row["ecpe_s1_surprise_gold_tokens"] == 2 and row["ecpe_s2_joy_gold"] == 0
    # a subtask-2-only config has no subtask-1 counts
    only2 = scores.filter(pl.col("run") == "ecpe_oracle_subtask=2")
    assert only2["ecpe_s1_joy_gold"].is_null().all() and only2["ecpe_s2_joy_gold"].sum() == 1
    summary = pl.read_csv(run_dir / "summary.csv")
    assert summary.filter(pl.col("run") == "ecpe_oracle_subtask=both")["score"].item() == pytest.approx(1, abs=1e-7)
    assert summary.filter(pl.col("run") == "ecpe_baseline_baseline_emotion=joy")["score"].item() == 0.0


def test_report_figures_are_the_scorers_to_the_last_digit(job_run):
    run_dir, root = job_run
    scores = pl.read_parquet(run_dir / "scores.parquet")
    figures = config_figures(scores)
    records = {r["run"]: r for r in json.loads((run_dir / "configs.json").read_text())}
    assert set(figures) == set(records)
    task = EcpeTask()
    for run, by in figures.items():
        assert set(by) == set(records[run]["options"]["subtask"] == "both" and (1, 2) or
                              (records[run]["options"]["subtask"],))
        official = {k: v for st in sorted(by) for k, v in by[st][0].items()}
        stored = {k: v for k, v in records[run]["summary"].items()}
        assert {k: repr(v) for k, v in official.items()} == {k: repr(stored[k]) for k in official}, run
        # and the per-emotion tables are the scorer's own
        opts = parse_options(task, records[run]["options"])
        loaded = task.load(task.Dataset(data=str(root)), opts)
        scored = task.score(loaded.samples, task.predict(opts.method, loaded.samples, opts), opts, ScoreContext())
        for st in by:
            assert by[st][1].equals(scored.tables[f"ecpe_subtask{st}_per_emotion"]), (run, st)
    # hand-worked: the `sadness` baseline names each utterance whole as its own cause; only 1375's utterance 2 is
    # sadness in the gold, with cause utterance 1: no strict match, no overlap (another group), so all zero;
    # subtask 2: (2, 2, sadness) is not gold either
    sad = figures["ecpe_baseline_baseline_emotion=sadness"]
    assert sad[1][0]["strict_f1"] == 0.0 and sad[1][0]["Proportional_precision"] == 0.0
    table = sad[1][1].filter(pl.col("emotion") == "sadness").to_dicts()[0]
    assert (table["gold_pairs"], table["predicted_pairs"], table["correct"]) == (1, 9, 0)


def test_report_html_has_both_subtasks_and_the_per_emotion_tables(job_run):
    run_dir, _ = job_run
    for page in ((run_dir / "report.html").read_text(encoding="utf-8"),
                 rebuild_report(run_dir).read_text(encoding="utf-8")):
        page = page.replace("<wbr>", "")  # the table helper may offer line breaks after underscores
        for title in ("ECPE subtask 1: official scores", "ECPE subtask 1: per emotion",
                      "ECPE subtask 2: official scores", "ECPE subtask 2: per emotion"):
            assert f"<h2>{title}</h2>" in page
        assert "<th>weighted_strict_f1</th>" in page and "<th>weighted_Proportional_f1</th>" in page
        assert "<th>weighted_f1</th>" in page and "<th>proportional_f1</th>" in page
        assert "<td class=\"t\">0.99999999</td>" in page  # the oracle, visibly short of 1
        # one row per emotion: subtask 1 in 2 at-a-glance tables (strict, proportional F1, a column per config) and
        # 2 detail tables of 3 configs; subtask 2 in 1 at-a-glance table and 1 detail table of 4 configs
        assert page.count("<td class=\"t\">surprise</td>") == (2 + 2 * 3) + (1 + 4)
        assert "<th>ecpe_baseline_baseline_emotion=sadness</th>" in page  # a config as an at-a-glance column
        assert "<details><summary>strict: counts, precision, recall and F1" in page


def test_count_columns_give_back_the_official_figures_on_the_test_set(ecac_root):
    """On all 341 conversations, and on every other one: the summed count columns give the scorer's figures."""
    task = EcpeTask()
    samples = data.load(ecac_root).samples
    for method in ("oracle", "baseline"):
        opts = parse_options(task, {"method": method})
        for part in (samples, samples[::2]):
            preds = task.predict(method, part, opts)
            scored = task.score(part, preds, opts, ScoreContext())
            info = scored.tables["sample_info"]
            for st, keys in ((1, O.SUBTASK1_KEYS), (2, O.SUBTASK2_KEYS)):
                sums = info.select(pl.col(count_columns(st)).sum()).to_dicts()[0]
                figures, table = figures_from_sums(sums, st)
                assert {k: repr(figures[k]) for k in keys} == {k: repr(scored.summary[k]) for k in keys}
                assert table.equals(scored.tables[f"ecpe_subtask{st}_per_emotion"])
