"""Both LLM methods through the real vLLM CPU engine (the session's `smoke_pool`; the smoke model's pairs are noise):

- `jobs/ecpe-quickstart.yaml` runs as shipped (4 test conversations; direct, utterance, oracle, baseline) on the one
  session engine: every conversation answered with 0 unreadable answers, the official submission files of every
  config pass our validator and score through `emocaustics score ecpe` to the job's own figures, the report has the
  ECPE sections;
- an answer the real engine cuts at its token budget makes the conversation a failure naming the step and the cut
  (never a silently shorter pair list), and the files still pass the validator with that conversation empty.
Engine work here: 4 + 19 answers for the job, 1 cut one after; the engine start is the session's.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import time
from pathlib import Path

import polars as pl
import pytest
import yaml

from emocaustics.core.task import Failure, ScoreContext, parse_options
from emocaustics.jobs.runner import run_job
from emocaustics.jobs.spec import load_job
from emocaustics.tasks.ecpe import cli, data
from emocaustics.tasks.ecpe import official as O
from emocaustics.tasks.ecpe.task import EcpeTask
from emocaustics.tasks.ecpe.gold import read_gold
from emocaustics.tasks.ecpe.validate import check_prediction

pytestmark = [pytest.mark.engine, pytest.mark.slow]

JOB = Path(__file__).resolve().parents[3] / "jobs" / "ecpe-quickstart.yaml"
RAW = yaml.safe_load(JOB.read_text(encoding="utf-8"))
IDS: list[int] = RAW["dataset"]["ecpe"]["ids"]
LLM_RUNS = {"ecpe_direct_smoke_max_pairs=12": ("direct", 4), "ecpe_utterance_smoke": ("utterance", 19)}


def _gold_dir(root: Path, out: Path) -> Path:
    """The organisers' gold files cut down to the job's conversations (the official layout)."""
    out.mkdir(parents=True, exist_ok=True)
    for st in (1, 2):
        records = [r for r in json.loads((root / data.FILES[st]).read_text(encoding="utf-8"))
                   if int(r["conversation_ID"]) in IDS]
        (out / f"Subtask_{st}_gold.json").write_text(json.dumps(records), encoding="utf-8")
    return out


@pytest.fixture(scope="module")
def quickstart(smoke_pool, ecac_root, tmp_path_factory):
    from emocaustics.models.pool import registered_pools

    tmp = tmp_path_factory.mktemp("ecpe_engine")
    job = load_job(JOB, overrides={"output": str(tmp / "runs"), "cache_dir": str(tmp / "cache"),
                                   "dataset": {"ecpe": {**RAW["dataset"]["ecpe"], "data": str(ecac_root)}}})
    before, pools = asyncio.run(smoke_pool.stats()), set(registered_pools())
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        run_dir = run_job(job, out=str(tmp / "run"))
    # for the log only (never asserted): the job's time on the already started session engine
    print(f"ecpe quickstart job: {time.perf_counter() - t0:.1f} s (engine start {smoke_pool.start_seconds:.1f} s)")
    after = asyncio.run(smoke_pool.stats())
    assert after["engine_starts"] == before["engine_starts"] and set(registered_pools()) == pools  # one engine
    return run_dir, _gold_dir(ecac_root, tmp / "gold"), after["calls"] - before["calls"]


def test_both_methods_answer_every_conversation_with_nothing_unreadable(quickstart):
    run_dir, _, engine_calls = quickstart
    scores = pl.read_parquet(run_dir / "scores.parquet")
    assert set(scores["run"]) == {"ecpe_oracle", "ecpe_baseline", *LLM_RUNS}
    for label, (method, answers) in LLM_RUNS.items():
        rows = scores.filter(pl.col("run") == label)
        assert sorted(rows["sample_id"].to_list()) == sorted(map(str, IDS)) and not rows["failed"].any(), rows
        assert (rows["kind"] == "engine-check").all()
        stats = [json.loads(x) for x in (run_dir / "predictions" / label / "stats.jsonl").read_text().splitlines()]
        assert sum(r["unparseable"] for r in stats) == 0  # guided decoding: every answer parsed the first time
        assert rows["llm_calls"].sum() + rows["cache_hits"].sum() == answers  # one per conversation / utterance
        preds = EcpeTask().store.read_predictions(run_dir / "predictions" / label)
        assert set(preds) == set(map(str, IDS)) and not any(isinstance(p, Failure) for p in preds.values())
        for p in preds.values():  # the official lists, and the model's own span text beside each subtask-1 pair
            assert isinstance(p["subtask1"], list) and len(p["spans"]) == len(p["subtask1"])
            assert p["dropped"] == []  # guided decoding keeps every utterance number in range
    assert engine_calls == sum(n for _, n in LLM_RUNS.values())
    configs = {r["run"]: r for r in json.loads((run_dir / "configs.json").read_text())}
    assert all(repr(v).startswith("0.99999999") for v in configs["ecpe_oracle"]["summary"].values())


@pytest.mark.parametrize("label", ["ecpe_oracle", "ecpe_baseline", *LLM_RUNS])
def test_submission_files_pass_our_validator_and_score_as_the_job_did(quickstart, label, capsys):
    run_dir, gold_dir, _ = quickstart
    pred_dir = run_dir / "predictions" / label
    for st in (1, 2):
        gold = read_gold(json.loads((gold_dir / f"Subtask_{st}_gold.json").read_text()), st, "gold")
        checked = check_prediction(json.loads((pred_dir / f"Subtask_{st}_pred.json").read_text()), st,
                                   f"Subtask_{st}_pred.json", gold)
        assert not checked.errors, checked.errors
    assert (pred_dir / "submission.zip").is_file()
    # the files, scored like the organisers' scorer, give the job's own figures (and its scores.txt)
    p = argparse.ArgumentParser()
    cli.register_score(p.add_subparsers(dest="t"))
    args = p.parse_args(["ecpe", "--pred", str(pred_dir), "--gold", str(gold_dir)])
    assert args.func(args) == 0
    out = capsys.readouterr().out
    assert out == (pred_dir / "scores.txt").read_text()
    summary = next(r for r in json.loads((run_dir / "configs.json").read_text()) if r["run"] == label)["summary"]
    assert dict(line.split(":") for line in out.splitlines()) == {k: repr(summary[k]) for k in
                                                                  (*O.SUBTASK1_KEYS, *O.SUBTASK2_KEYS)}


def test_report_has_the_ecpe_sections(quickstart):
    page = (quickstart[0] / "report.html").read_text(encoding="utf-8").replace("<wbr>", "")
    for st in (1, 2):
        assert f"<h2>ECPE subtask {st}: official scores</h2>" in page
        assert f"<h2>ECPE subtask {st}: per emotion</h2>" in page
    assert "ecpe_utterance_smoke" in page


def test_an_answer_the_engine_cuts_is_a_named_failure(smoke_pool, ecac_root, tmp_path):
    """A budget of 8 tokens: the real engine stops mid-JSON; the conversation fails saying so. One greedy attempt
    (re-asking is the solver tests' business): the job above saw this conversation's greedy answer run to hundreds of
    tokens, so its first 8 are a cut."""
    from emocaustics.solve.plan import asolve_samples

    task = EcpeTask()
    opts = parse_options(task, {"method": "direct", "max_pairs": 12, "max_tokens_cap": 8, "retries": 0})
    samples = task.load(task.Dataset(data=str(ecac_root), ids=IDS[:2]), opts).samples
    good = {"subtask1": [["1_joy", "1_0_1"]], "subtask2": [["1_joy", "1"]]}
    out = tmp_path / "pred"
    task.store.write_prediction(out, samples[1].id, good)  # already done: only the first conversation is solved
    done = {k for k, v in task.store.read_predictions(out).items() if not isinstance(v, Failure)}
    rows = asyncio.run(asolve_samples(task, [s for s in samples if s.id not in done], opts, smoke_pool, out,
                                      concurrency=4))
    assert len(rows) == 1 and not rows[0]["ok"]
    assert rows[0]["step"] == f"direct conversation {samples[0].id}"
    assert "max_tokens=8" in rows[0]["reason"] and "after 1 attempts" in rows[0]["reason"], rows[0]["reason"]
    preds = task.store.read_predictions(out)
    assert isinstance(preds[samples[0].id], Failure)
    scored = task.score(samples, preds, opts, ScoreContext())
    failed = scored.rows.filter(pl.col("sample_id") == samples[0].id)
    assert set(failed["status"]) == {"failed"} and "max_tokens=8" in failed["reason"][0]
    task.finalize(out, samples, preds, opts)
    for st in (1, 2):
        records = json.loads((out / f"Subtask_{st}_pred.json").read_text())
        assert not check_prediction(records, st, "x").errors
        assert [r["emotion-cause_pairs"] for r in records][0] == []  # the failed conversation: present, empty
