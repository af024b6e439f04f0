"""`emocaustics export` (emocaustics/exports/) on one run of every task: aer, ecpe, sextuple, emotion, narrative and human
by their calibration methods (no model needed), aer on the session's real vLLM CPU engine (the smoke model: real
messages and token counts), and aer against the OpenAI-compatible stand-in of a remote API, which answers one question
with invalid JSON on every request so that it fails.

- inspect: each config's log read back by the real `inspect_ai.log.read_eval_log`: sample count, ids, every
  per-sample score, token usage and the calls (as model events) equal the run's; the header carries task, model,
  options, dataset and provenance; the failed sample is an error;
- eee: every aggregate and instance record validates against the published Every Eval Ever schemas
  (../shared/schemas/every-eval-ever, as CI has them), with our scores, ids and token counts;
- a broken run folder is one error naming the file (and the line).
The Chromium test of `inspect view` is in test_export_view.py.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import polars as pl
import pytest

from emocaustics.core.errors import UsageError
from fakes.browser import REPO

pytestmark = [pytest.mark.engine, pytest.mark.slow]
SCHEMAS = REPO.parent / "shared" / "schemas" / "every-eval-ever"


def _configs(run: Path) -> list[dict]:
    return json.loads((run / "configs.json").read_text(encoding="utf-8"))


def test_every_config_reads_back_in_inspect(run_dir: Path, tmp_path: Path) -> None:
    from inspect_ai.log import read_eval_log

    from emocaustics.cli import main
    from emocaustics.evallog.read import RunLog

    assert main(["export", str(run_dir), "--format", "inspect", "--out", str(tmp_path / "logs")]) == 0
    logs = {log.eval.task_display_name: log for log in map(read_eval_log, sorted((tmp_path / "logs").glob("*.json")))}
    configs = _configs(run_dir)
    assert sorted(logs) == sorted(c["run"] for c in configs)
    assert {c["task"] for c in configs} == {"aer", "ecpe", "sextuple", "emotion", "narrative", "human"}
    scores, rows = pl.read_parquet(run_dir / "scores.parquet"), pl.read_parquet(run_dir / "rows.parquet")
    log_of_run = RunLog(run_dir)
    for cfg in configs:
        log, label = logs[cfg["run"]], cfg["run"]
        mine = scores.filter(pl.col("run") == label)
        assert log.eval.task == f"emocaustics/{cfg['task']}" and log.eval.task_args == cfg["options"]
        assert log.eval.solver == cfg["method"] and log.eval.task_version == (cfg["prompts_version"] or 0)
        assert log.eval.packages["emocaustics"] and log.eval.revision and len(log.eval.revision.commit) == 40
        assert [s.id for s in log.samples] == [str(x) for x in mine["sample_id"]]
        assert log.results.total_samples == mine.height
        table = pl.read_csv(run_dir / "summary.csv").filter(pl.col("run") == label).to_dicts()[0]
        assert log.results.scores[0].metrics["mean"].value == table["score"]  # the headline is summary.csv's
        by_sample = {s.id: s for s in log.samples}
        for sid, metric, value in rows.filter(pl.col("run") == label).select("sample_id", "metric", "value").iter_rows():
            got = by_sample[str(sid)].scores
            assert (metric not in got) if value is None or value != value else got[metric].value == value, (sid, metric)
        for s in mine.to_dicts():
            sample = by_sample[str(s["sample_id"])]
            usage = sample.model_usage.get(log.eval.model)
            if s["prompt_tokens"] or s["generated_tokens"]:
                assert (usage.input_tokens, usage.output_tokens) == (s["prompt_tokens"], s["generated_tokens"])
            else:
                assert usage is None
            calls = log_of_run.sample(label, str(s["sample_id"]))["calls"]
            events = [e for e in sample.events if e.event == "model"]
            assert len(events) == len(calls)
            for event, call in zip(events, calls):
                assert [m.text for m in event.input] == [m["content"] for m in call["messages"]]
                assert event.output.completion == (call["text"] or "")
                assert event.output.usage.input_tokens == call["prompt_tokens"]
            assert (sample.error is not None) == (s["status"] == "failed")
            if sample.error is not None:
                assert sample.error.message == s["reason"]
    engine = next(lg for lg in logs.values() if lg.eval.model.startswith("smoke/"))
    assert engine.eval.model == "smoke/smoke" and engine.stats.model_usage["smoke/smoke"].input_tokens > 0
    first = engine.samples[0]
    assert first.messages[0].role == "system" and first.messages[-1].role == "assistant"
    assert first.model_usage["smoke/smoke"].output_tokens > 0
    api = next(lg for lg in logs.values() if lg.eval.model == "openai/fake-chat")
    failed = [s for s in api.samples if s.error is not None]
    assert [s.id for s in failed] == ["q-2"] and "unreadable" in failed[0].error.message


def _schema(name: str) -> dict:
    path = SCHEMAS / name
    if not path.is_file():
        pytest.skip(f"the Every Eval Ever schemas are not beside the checkout ({SCHEMAS})")
    return json.loads(path.read_text(encoding="utf-8"))


def test_every_config_validates_as_every_eval_ever(run_dir: Path, tmp_path: Path) -> None:
    import hashlib

    import jsonschema

    import emocaustics as ec

    aggregate_schema, instance_schema = _schema("eval.schema.json"), _schema("instance_level_eval.schema.json")
    written = ec.export(run_dir, format="eee", out=tmp_path / "eee")
    aggregates = [p for p in written if p.suffix == ".json"]
    configs = _configs(run_dir)
    assert len(aggregates) == len(configs) and len(written) == 2 * len(configs)
    scores = pl.read_parquet(run_dir / "scores.parquet")
    seen, topic_intervals = set(), 0
    for path in aggregates:
        record = json.loads(path.read_text(encoding="utf-8"))
        jsonschema.validate(record, aggregate_schema)
        detail = record["detailed_evaluation_results"]
        lines_path = tmp_path / "eee" / detail["file_path"]
        text = lines_path.read_text(encoding="utf-8")
        assert hashlib.sha256(text.encode("utf-8")).hexdigest() == detail["checksum"]
        instances = [json.loads(x) for x in text.splitlines()]
        assert len(instances) == detail["total_rows"]
        for inst in instances:
            jsonschema.validate(inst, instance_schema)
            assert inst["evaluation_id"] == record["evaluation_id"]
        label = record["source_metadata"]["additional_details"]["config"]
        seen.add(label)
        mine = scores.filter(pl.col("run") == label)
        assert [i["sample_id"] for i in instances] == [str(x) for x in mine["sample_id"]]
        assert [i["evaluation"]["score"] for i in instances] == [0.0 if v is None else v for v in mine["score"]]
        with_tokens = [i for i in instances if i.get("token_usage")]
        assert sum(i["token_usage"]["input_tokens"] for i in with_tokens) == mine["prompt_tokens"].sum()
        if record["model_info"]["id"] == "smoke/smoke":
            assert with_tokens and all(i["token_usage"]["output_tokens"] > 0 for i in with_tokens)
        failed = [i for i in instances if i["error"]]
        assert len(failed) == mine.filter(pl.col("status") == "failed").height
        interval = record["evaluation_results"][0]["score_details"]["uncertainty"].get("confidence_interval")
        if interval and label.startswith("aer_"):  # AER's questions cluster by topic: the interval says so
            assert "clusters (topic)" in interval["method"], interval
            topic_intervals += 1
    assert seen == {c["run"] for c in configs} and topic_intervals


def test_a_broken_run_folder_is_one_error_naming_the_file(run_dir: Path, tmp_path: Path, capsys) -> None:
    from emocaustics.cli import main

    broken = tmp_path / "run"
    shutil.copytree(run_dir, broken, ignore=shutil.ignore_patterns("predictions", "report.html", "tables"))
    label = _configs(run_dir)[0]["run"]
    staging = broken / "evallog" / "staging"
    staging.mkdir(parents=True, exist_ok=True)
    (staging / f"{label}.jsonl").write_text('{"sample_id": "q-2", "calls\n', encoding="utf-8")  # a killed write
    with pytest.raises(UsageError, match=re.escape(f"{staging / label}.jsonl:1: not an eval-log line")):
        __import__("emocaustics").export(broken, format="eee", out=tmp_path / "out")
    (broken / "scores.parquet").unlink()
    assert main(["export", str(broken), "--format", "inspect"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"emocaustics: error: {broken / 'scores.parquet'}: missing (the per-sample scores); export reads a "
                   "finished run folder of `emocaustics run`"]
    assert not (broken / "export").exists()


def test_the_documented_commands_run(run_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/exports.md's `emocaustics export` examples, on this run (its placeholder replaced), in a fresh folder."""
    import shlex

    from emocaustics.cli import main

    page = (REPO / "docs" / "exports.md").read_text(encoding="utf-8")
    commands = [shlex.split(line)[1:] for line in page.splitlines() if line.startswith("emocaustics export ")]
    assert len(commands) == 2
    monkeypatch.chdir(tmp_path)
    for argv in commands:
        assert main([str(run_dir) if a == "runs/quickstart/<timestamp>" else a for a in argv]) == 0
    assert len(list(Path("logs").glob("*.json"))) == len(_configs(run_dir))
    assert len(list(Path("eee").rglob("*_samples.jsonl"))) == len(_configs(run_dir))
