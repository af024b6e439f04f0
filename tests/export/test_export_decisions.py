"""What each export writes for a config, field by field (issue 53's mutation area `exports`: exports/names.py,
inspect_log.py, eee.py), from records written here by hand (`exports.source`'s types) against the formats' own
fields: inspect_ai's eval log (version 2) and Every Eval Ever's records (schema 0.3.0). Fast: no run folder, no
Ray, no engine (the records a real run gives are test_export_epochs.py's)."""

from __future__ import annotations

import hashlib
import math
import uuid
from datetime import datetime
from pathlib import Path

import pytest

from emocaustics.exports import eee, inspect_log
from emocaustics.exports.names import ModelName, jsonable, model_name, text
from emocaustics.exports.source import ConfigRecord, RunRecord, SampleRecord, utc

NAN = float("nan")


def _sample(**kw) -> SampleRecord:
    base = dict(id="s1", input={"q": "é"}, target="A", prediction={"answer": ["A"]}, status="ok", reason=None,
                score=1.0, metrics={"accuracy": 1.0, "f1": None}, calls=[], prompt_tokens=0, generated_tokens=0)
    return SampleRecord(**{**base, **kw})


def _config(**kw) -> ConfigRecord:
    base = dict(label="aer_llm", task="aer", method="llm", model="api", spec="openai:Qwen/Q7@http://h:8/v1",
                options={"prompt": "zero-shot"}, dataset={"split": "dev"}, dataset_info={"dataset": "semeval"},
                sample_metric="accuracy", summary={"accuracy": 0.5, "note": "x", "flag": True, "bad": NAN},
                table={"run": "aer_llm", "score": 0.5, "ci_low": 0.25, "ci_high": 0.75, "samples": 2},
                headline={"score": 0.5}, prompts_version="p1", software={"emocaustics": "1.2", "git": {
                    "commit": "abc", "dirty": False, "origin": "o"}}, created="2026-12-01T10:00:00+00:00")
    return ConfigRecord(**{**base, **kw})


RUN = RunRecord(Path("/runs/r1"), "job", "h4sh", "finished", "2026-12-01T09:00:00", "2026-12-01T11:00:00", [])
CALL = {"messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "q?"}], "text": "A",
        "sampling": {"temperature": 0.0, "max_tokens": 16, "top_p": None, "seed": 7}, "prompt_tokens": 5,
        "generated_tokens": 1, "latency": 0.5, "start": 1.5, "retry": 1, "cached": True, "seq": 0, "step": "ask",
        "parsed": {"answer": ["A"]}}


# ---- names


@pytest.mark.parametrize("spec, name", [
    ("openai:gpt-4o@https://api.openai.com/v1", ModelName("openai", "gpt-4o", "https://api.openai.com/v1", True,
                                                          "openai")),
    ("openai:Qwen/Q7@http://h:8/v1", ModelName("openai", "Qwen/Q7", "http://h:8/v1", True, "Qwen")),
    ("openai:m@http://h:8/v1", ModelName("openai", "m", "http://h:8/v1", True, "unknown")),
    ("anthropic:claude-x", ModelName("anthropic", "claude-x", None, True, "anthropic")),
    ("vllm:/models/my-model/", ModelName("vllm", "my-model", None, False, "unknown")),
    ("vllm:Org/M", ModelName("vllm", "Org/M", None, False, "Org")),
    # a local folder however it is written (its name only), a name ending in X, a hub name of three parts
    ("vllm:~/models/m", ModelName("vllm", "m", None, False, "unknown")),
    ("vllm:./ckpt/m/", ModelName("vllm", "m", None, False, "unknown")),
    ("vllm:.hidden-model", ModelName("vllm", ".hidden-model", None, False, "unknown")),
    ("vllm:Org/MIX", ModelName("vllm", "Org/MIX", None, False, "Org")),
    ("openai:org/team/m@http://h:8/v1", ModelName("openai", "org/team/m", "http://h:8/v1", True, "org")),
])
def test_a_models_name(spec, name):
    assert model_name(spec) == name
    assert model_name(None) is None


def test_values_as_json_and_text():
    assert jsonable({1: (1.5, NAN, math.inf), "p": Path("/x"), "b": True, "n": None, "s": "é"}) == {
        "1": [1.5, None, None], "p": "/x", "b": True, "n": None, "s": "é"}
    assert text(None) == "" and text("as it is") == "as it is"
    assert text({"a": [1, NAN], "é": 2}) == '{\n "a": [\n  1,\n  null\n ],\n "é": 2\n}'
    assert text(3) == "3"


def test_times_with_their_zone():
    assert utc(0.0) == "1970-01-01T00:00:00+00:00"
    assert utc(iso="2026-12-01T09:00:00") == "2026-12-01T09:00:00+00:00"
    assert utc(iso="2026-12-01T09:00:00+02:00") == "2026-12-01T09:00:00+02:00"
    assert utc() == "" and utc(iso="") == ""


# ---- inspect


def test_the_inspect_log_file_name():
    log = {"eval": {"created": "2026-12-01T10:00:00.123+00:00", "eval_id": "E"}}
    assert inspect_log.file_name(_config(label="epochs:a_b=4."), log) == "2026-12-01T10-00-00+00-00_epochs-a-b-4_E.json"
    assert inspect_log.file_name(_config(label="Xbox Run-9!"), log) == "2026-12-01T10-00-00+00-00_Xbox-Run-9_E.json"


def test_inspects_small_pieces():
    assert inspect_log._usage(3, 4) == {"input_tokens": 3, "output_tokens": 4, "total_tokens": 7}
    assert inspect_log._usage(3, 4, 0.0) == {"input_tokens": 3, "output_tokens": 4, "total_tokens": 7,
                                              "total_cost": 0.0}
    assert inspect_log._message("narrator", None) == {"role": "user", "content": ""}
    assert inspect_log._message("tool", "t") == {"role": "tool", "content": "t"}
    assert inspect_log._message("assistant", "x", "m") == {"role": "assistant", "content": "x", "source": "generate",
                                                           "model": "m"}
    assert inspect_log._message("assistant", "x") == {"role": "assistant", "content": "x", "source": "generate"}
    assert inspect_log._id("a", "b") == hashlib.sha256(b"a\0b").hexdigest()[:22]
    assert inspect_log._name(None) == "none" and inspect_log._name(model_name("openai:m@http://h/v1")) == "openai/m"


def test_a_model_call_as_an_inspect_event():
    event = inspect_log._event(CALL, "openai/m", 100.0)
    assert event == {
        "event": "model", "timestamp": utc(101.5), "working_start": 1.5, "model": "openai/m",
        "input": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "q?"}],
        "tools": [], "tool_choice": "none", "config": {"max_tokens": 16, "temperature": 0.0, "seed": 7},
        "output": {"model": "openai/m", "choices": [{"message": {"role": "assistant", "content": "A",
                                                                 "source": "generate", "model": "openai/m"},
                                                     "stop_reason": "stop"}],
                   "completion": "A", "usage": {"input_tokens": 5, "output_tokens": 1, "total_tokens": 6},
                   "time": 0.5},
        "retries": 1, "cache": "read", "working_time": 0.5,
        "metadata": {"seq": 0, "step": "ask", "parsed": {"answer": ["A"]}}}
    failed = inspect_log._event({"error": "HTTP 500", "text": None}, "m", None, "grader")
    assert failed["timestamp"] == utc(0.0) and failed["working_start"] == 0.0 and failed["input"] == []
    assert failed["output"]["choices"][0]["stop_reason"] == "unknown" and failed["output"]["error"] == "HTTP 500"
    assert failed["output"]["completion"] == "" and failed["output"]["usage"]["total_tokens"] == 0
    assert (failed["error"], failed["role"], failed["metadata"], failed["config"]) == ("HTTP 500", "grader", None, {})
    assert "cache" not in failed and "error" not in event and "role" not in event
    # what a call's parse and its sampling add; a call without its start begins at the sample's start
    more = inspect_log._event({**CALL, "start": None, "parse_error": "bad json", "repaired": True,
                               "schema": {"type": "object"}, "sampling": {"top_p": 0.9}}, "m", 100.0)
    assert (more["timestamp"], more["working_start"], more["config"]) == (utc(100.0), 0.0, {"top_p": 0.9})
    assert more["metadata"] == {"seq": 0, "step": "ask", "parse_error": "bad json", "repaired": True,
                                "schema": {"type": "object"}, "parsed": {"answer": ["A"]}}


def test_a_sample_in_inspect():
    s = _sample(calls=[CALL, {**CALL, "text": "B", "messages": [{"role": "user", "content": "again"}]}],
                prompt_tokens=10, generated_tokens=2, seconds=4.0, finished=1000.0, cost_usd=0.25, llm_calls=2,
                cache_hits=1, epoch=2, judge={"model": "openai:j@http://h/v1", "finished": 2000.0, "seconds": 10.0,
                                             "calls": [{"text": "yes", "start": 1.0}]})
    out = inspect_log._sample(s, "openai/m")
    assert (out["id"], out["epoch"], out["input"], out["target"]) == ("s1", 2, '{\n "q": "é"\n}', "A")
    assert [(m["role"], m["content"], m.get("model")) for m in out["messages"]] == [
        ("system", "be brief", None), ("user", "q?", None), ("assistant", "A", "openai/m"), ("user", "again", None),
        ("assistant", "B", "openai/m")]
    assert out["output"] == {"model": "openai/m", "choices": [{"message": {
        "role": "assistant", "content": "B", "source": "generate", "model": "openai/m"}, "stop_reason": "stop"}],
        "completion": "B", "usage": {"input_tokens": 10, "output_tokens": 2, "total_tokens": 12}}
    assert out["scores"] == {"accuracy": {"value": 1.0, "answer": '{"answer": ["A"]}', "metadata": {"status": "ok"}}}
    assert out["metadata"] == {"status": "ok", "reason": None, "prediction": {"answer": ["A"]},
                               "unscored_metrics": ["f1"], "llm_calls": 2, "cache_hits": 1, "cost_usd": 0.25}
    assert [e["timestamp"] for e in out["events"]] == [utc(997.5), utc(997.5), utc(1991.0)]
    assert [e["model"] for e in out["events"]] == ["openai/m", "openai/m", "openai/j"]
    assert out["events"][2]["role"] == "grader" and "role" not in out["events"][0]
    assert (out["total_time"], out["working_time"], out["started_at"], out["completed_at"]) == (
        4.0, 4.0, utc(996.0), utc(1000.0))
    assert out["model_usage"] == {"openai/m": {"input_tokens": 10, "output_tokens": 2, "total_tokens": 12,
                                               "total_cost": 0.25}}
    assert "error" not in out


def test_a_failed_sample_without_calls_in_inspect():
    s = _sample(status="failed", reason="timeout", score=0.0, metrics={"accuracy": 0.0, "f1": 0.5}, prediction=None)
    out = inspect_log._sample(s, "none")
    assert out["output"]["completion"] == "" and "usage" not in out["output"] and out["messages"] == []
    assert out["scores"] == {"accuracy": {"value": 0.0, "answer": "null", "explanation": "timeout",
                                          "metadata": {"status": "failed"}},
                             "f1": {"value": 0.5, "explanation": "timeout", "metadata": {"status": "failed"}}}
    assert out["error"] == {"message": "timeout", "traceback": "", "traceback_ansi": ""}
    assert "model_usage" not in out and "started_at" not in out and out["events"] == []
    assert inspect_log._sample(_sample(status="failed", prediction="p"), "none")["error"]["message"] == "failed"
    assert inspect_log._sample(_sample(prediction="p"), "none")["output"]["completion"] == "p"
    assert "model_usage" in inspect_log._sample(_sample(generated_tokens=1), "none")
    # a sample that called a model counts its usage even where no token was counted
    assert inspect_log._sample(_sample(calls=[CALL]), "m")["model_usage"] == {"m": {
        "input_tokens": 0, "output_tokens": 0, "total_tokens": 0}}
    # the answer column keeps a prediction's text as it is (no \u escapes)
    assert inspect_log._sample(_sample(prediction="é"), "m")["scores"]["accuracy"]["answer"] == '"é"'


def test_inspects_results_are_the_headline_then_the_corpus_values():
    cfg = _config(samples=[_sample(), _sample(id="s2", status="failed")],
                  table={"ci_low": 0.25, "ci_high": 0.75, "clusters": 12, "cluster_by": "topic", "x": 1})
    assert inspect_log._results(cfg, "pass_at_2") == {
        "total_samples": 2, "completed_samples": 1,
        "scores": [{"name": "accuracy", "scorer": "emocaustics/aer", "reducer": "pass_at_2", "scored_samples": 1,
                    "unscored_samples": 1, "metrics": {
                        "mean": {"name": "mean", "value": 0.5, "metadata": {"ci_low": 0.25, "ci_high": 0.75,
                                                                            "clusters": 12, "cluster_by": "topic"}},
                        "accuracy": {"name": "accuracy", "value": 0.5}}}]}
    cfg = _config(headline={}, summary={"mean": 0.1, "accuracy": 0.5, "n": 3, "flag": True, "bad": NAN})
    assert inspect_log._results(cfg, None)["scores"][0]["metrics"] == {
        "mean": {"name": "mean", "value": 0.1}, "accuracy": {"name": "accuracy", "value": 0.5},
        "n": {"name": "n", "value": 3}}


def test_an_inspect_log_of_a_config_in_epochs(monkeypatch):
    monkeypatch.setattr(inspect_log, "_dataset_name", lambda cfg: "semeval/dev")
    samples = [_sample(finished=50.0, prompt_tokens=3, generated_tokens=1, cost_usd=0.5, calls=[CALL]),
               _sample(id="s2", epoch=2, finished=70.0, prompt_tokens=2, calls=[CALL]),
               _sample(id="s3", finished=None)]
    cfg = _config(epochs=2, reducer="pass@2", samples=samples, reduced={"s1": 1.0, "s2": None})
    log = inspect_log.inspect_log(RUN, cfg)
    head = log["eval"]
    assert (log["version"], log["status"]) == (2, "success")
    assert head["eval_id"] == hashlib.sha256(b"h4sh\0r1\0aer_llm").hexdigest()[:22] and head["run_id"] == "h4sh"
    assert (head["created"], head["task"], head["task_id"]) == (
        "2026-12-01T10:00:00+00:00", "emocaustics/aer", hashlib.sha256(b"aer\0aer_llm").hexdigest()[:22])
    assert (head["task_version"], head["task_display_name"], head["task_args"], head["task_args_passed"],
            head["solver"]) == ("p1", "aer_llm", {"prompt": "zero-shot"}, {"prompt": "zero-shot"}, "llm")
    assert head["dataset"] == {"name": "semeval/dev", "location": None, "samples": 2, "sample_ids": ["s1", "s2"]}
    assert (head["model"], head["model_base_url"]) == ("openai/Qwen/Q7", "http://h:8/v1")
    assert head["config"] == {"epochs": 2, "epochs_reducer": ["pass_at_2"]}
    assert head["revision"] == {"type": "git", "origin": "o", "commit": "abc", "dirty": False}
    assert head["packages"] == {"emocaustics": "1.2"}
    assert head["metadata"]["emocaustics"] == {
        "run": "/runs/r1", "job": "job", "job_hash": "h4sh", "config": "aer_llm", "model_key": "api",
        "dataset": {"split": "dev"}, "dataset_info": {"dataset": "semeval"}, "prompts_version": "p1",
        "table": cfg.table, "summary": {"accuracy": 0.5, "note": "x", "flag": True, "bad": None}}
    assert log["plan"] == {"name": "plan", "steps": [{"solver": "llm", "params": {"prompt": "zero-shot"}}],
                           "config": {}}
    assert log["stats"] == {"started_at": "2026-12-01T10:00:00+00:00", "completed_at": utc(70.0), "model_usage": {
        "openai/Qwen/Q7": {"input_tokens": 5, "output_tokens": 1, "total_tokens": 6, "total_cost": 0.5}}}
    assert log["reductions"] == [{"scorer": "accuracy", "reducer": "pass_at_2", "samples": [
        {"value": 1.0, "sample_id": "s1"}]}]
    assert [s["id"] for s in log["samples"]] == ["s1", "s2", "s3"]
    assert log["results"]["scores"][0]["reducer"] == "pass_at_2"


def test_an_inspect_logs_dataset_revision_and_usage(monkeypatch):
    monkeypatch.setattr(inspect_log, "_dataset_name", lambda cfg: f"name of {cfg.label}")
    cfg = _config(dataset_info={"dataset": "semeval", "root": "/data/semeval"},
                  software={"emocaustics": "1.2", "git": {"commit": "abc", "dirty": True}},
                  samples=[_sample(prompt_tokens=4), _sample(id="s2", calls=[CALL]), _sample(id="s3")],
                  reduced={"s1": 1.0, "s2": 1.0, "s3": 1.0})
    log = inspect_log.inspect_log(RUN, cfg)
    assert (log["eval"]["dataset"]["name"], log["eval"]["dataset"]["location"]) == ("name of aer_llm",
                                                                                    "/data/semeval")
    assert log["eval"]["revision"] == {"type": "git", "origin": "", "commit": "abc", "dirty": True}
    # s1 counts by its tokens, s2 by its calls (no tokens counted), s3 not at all; no cost known: no total_cost
    assert log["stats"]["model_usage"] == {"openai/Qwen/Q7": {"input_tokens": 4, "output_tokens": 0,
                                                              "total_tokens": 4}}
    assert [s["output"]["model"] for s in log["samples"]] == ["openai/Qwen/Q7"] * 3


def test_an_inspect_log_of_a_calibration_config_once(monkeypatch):
    monkeypatch.setattr(inspect_log, "_dataset_name", lambda cfg: "d")
    run = RunRecord(Path("/runs/r2"), "job", "", "stopped", None, "2026-12-01T11:00:00", [])
    cfg = _config(spec=None, model=None, created=None, software=None, prompts_version=None, samples=[_sample()],
                  reduced={"s1": 1.0})
    log = inspect_log.inspect_log(run, cfg)
    assert log["status"] == "started" and log["eval"]["run_id"] == "r2" and log["eval"]["model"] == "none"
    assert log["eval"]["created"] == utc(0.0) and log["eval"]["task_version"] == 0
    assert "model_base_url" not in log["eval"] and "revision" not in log["eval"]
    assert log["eval"]["packages"] == {"emocaustics": "unknown"} and log["eval"]["config"] == {"epochs": 1}
    assert log["stats"] == {"started_at": utc(0.0), "completed_at": "2026-12-01T11:00:00+00:00", "model_usage": {}}
    assert "reductions" not in log


def test_the_dataset_and_its_split(monkeypatch):
    cfg = _config(task="ecpe", dataset={"split": "test"}, dataset_info={})
    assert inspect_log._dataset_name(cfg) == "ecpe/test"
    assert inspect_log._dataset_name(_config(task="ecpe", dataset={}, dataset_info={"dataset": "D", "split": "x"})) \
        == "D/x"
    assert inspect_log._dataset_name(_config(task="ecpe", dataset={}, dataset_info={})) == "ecpe"
    # a task whose split option has its own name (sextuple's `subset`), and one without any (narrative's: `split`)
    assert inspect_log._dataset_name(_config(task="sextuple", dataset={"subset": "long-20", "split": "no"},
                                             dataset_info={})) == "sextuple/long-20"
    assert inspect_log._dataset_name(_config(task="narrative", dataset={"split": "s1"}, dataset_info={})) == \
        "narrative/s1"


# ---- Every Eval Ever


def test_eees_small_pieces():
    assert eee._strings({"a": "s", "b": 1, "c": None, "d": [1, NAN], "é": {"x": "é"}}) == {
        "a": "s", "b": "1", "d": "[1, null]", "é": '{"x": "é"}'}
    assert eee._resampled({"cluster_by": "topic", "clusters": 12.0}) == "bootstrap over 12 clusters (topic), percentile"
    assert eee._resampled({"cluster_by": "topic", "clusters": None}) == "bootstrap over samples (percentile)"
    assert eee._resampled({"clusters": 5}) == "bootstrap over samples (percentile)"
    assert eee._safe("a b/c.d-e_f") == "a-b-c.d-e_f" and eee._safe("..x..") == "x" and eee._safe("/") == "unknown"
    assert eee._safe("X-ray X") == "X-ray-X"


def test_eees_model():
    assert eee._model(_config(spec=None, method="oracle")) == ("emocaustics/oracle", "emocaustics", "oracle", {
        "name": "oracle", "id": "emocaustics/oracle", "developer": "emocaustics",
        "additional_details": {"deployment_type": "unknown", "model_availability": "unknown",
                               "calibration": "a calibration method of the task; no model was called"}})
    assert eee._model(_config()) == ("Qwen/Q7", "Qwen", "Q7", {
        "name": "api", "id": "Qwen/Q7", "developer": "Qwen", "inference_platform": "openai",
        "additional_details": {"deployment_type": "externally_managed", "model_availability": "unknown",
                               "spec": "openai:Qwen/Q7@http://h:8/v1"}})
    assert eee._model(_config(spec="openai:org/team/m@http://h:8/v1"))[:3] == ("org/team/m", "org", "m")
    mid, dev, short, info = eee._model(_config(spec="vllm:m", model=None))
    assert (mid, dev, short, info["name"], info["additional_details"]["deployment_type"]) == (
        "vllm/m", "unknown", "m", "m", "self_deployed")


def test_eees_records_of_a_config_in_epochs():
    samples = [_sample(calls=[CALL]), _sample(id="s2", epoch=2, status="failed", reason="late", score=None)]
    cfg = _config(epochs=2, reducer="max", samples=samples, reduced={"s1": 1.0, "s2": 0.0},
                  table={"run": "aer_llm", "task": "aer", "method": "llm", "model": "api", "score": 0.5,
                         "ci_low": 0.25, "ci_high": 0.75, "cluster_by": None})
    path, agg, instances = eee.records(RUN, cfg)
    ident = str(uuid.UUID(bytes=hashlib.sha256(b"h4sh\0r1\0aer_llm").digest()[:16], version=4))
    assert path == f"data/aer/Qwen/Q7/{ident}.json"
    retrieved = str(int(datetime.fromisoformat("2026-12-01T11:00:00").timestamp()))
    eid = f"aer/Qwen/Q7/{retrieved}"
    assert (agg["schema_version"], agg["evaluation_id"], agg["retrieved_timestamp"]) == ("0.3.0", eid, retrieved)
    assert agg["evaluation_timestamp"] == "2026-12-01T10:00:00+00:00"
    assert agg["model_info"] == {"name": "api", "id": "Qwen/Q7", "developer": "Qwen", "inference_platform": "openai",
                                 "additional_details": {"deployment_type": "externally_managed",
                                                        "model_availability": "unknown",
                                                        "spec": "openai:Qwen/Q7@http://h:8/v1"}}
    assert agg["source_metadata"] == {"source_name": "emocaustics run job (aer_llm)", "source_type": "evaluation_run",
                                      "source_organization_name": "unknown", "evaluator_relationship": "other",
                                      "additional_details": {"job": "job", "job_hash": "h4sh", "config": "aer_llm"}}
    assert agg["eval_library"] == {"name": "emocaustics", "version": "1.2", "additional_details": {
        "git_commit": "abc", "git_dirty": "false", "git_origin": "o", "prompts_version": "p1"}}
    [result] = agg["evaluation_results"]
    assert (result["evaluation_result_id"], result["evaluation_name"]) == ("accuracy", "aer")
    assert result["evaluation_timestamp"] == "2026-12-01T10:00:00+00:00"  # the config's start, not the run's
    assert result["source_data"] == {"dataset_name": "semeval", "source_type": "other",
                                     "additional_details": {"split": "dev", "dataset": "semeval"}}
    assert result["metric_config"] == {
        "evaluation_description": "aer, method llm: the mean over samples of accuracy (a failure counts 0), each "
                                  "sample's 2 epochs reduced by max",
        "metric_id": "emocaustics.aer.accuracy", "metric_name": "accuracy", "lower_is_better": False,
        "metric_parameters": {"epochs": 2, "reducer": "max"}}
    details = result["score_details"]
    assert details["score"] == 0.5
    from emocaustics.stats.bootstrap import DEFAULT_LEVEL, DEFAULT_RESAMPLES

    assert details["uncertainty"] == {"num_samples": 2, "confidence_interval": {
        "lower": 0.25, "upper": 0.75, "confidence_level": DEFAULT_LEVEL,
        "method": "bootstrap over samples (percentile)"}, "num_bootstrap_samples": DEFAULT_RESAMPLES}
    assert details["details"] == {"accuracy": "0.5", "note": "x", "flag": "true", "bad": "null", "table.score": "0.5",
                                  "table.ci_low": "0.25", "table.ci_high": "0.75"}
    assert result["generation_config"] == {"generation_args": {"temperature": 0.0, "max_tokens": 16, "top_p": None},
                                           "additional_details": {"method": "llm", "prompt": "zero-shot"}}
    assert agg["detailed_evaluation_results"] == {"format": "jsonl", "file_path": f"data/aer/Qwen/Q7/{ident}_samples.jsonl",
                                                  "hash_algorithm": "sha256", "total_rows": 2}
    assert [(i["sample_id"], i["metadata"]["epoch"]) for i in instances] == [("s1", "1"), ("s2", "2")]
    assert all(i["evaluation_id"] == eid and i["model_id"] == "Qwen/Q7" for i in instances)


def test_eees_file_names_are_version_4_uuids():
    for label in ("a", "b", "c", "d", "e", "f"):
        stem = eee.records(RUN, _config(label=label, samples=[], reduced={}))[0].rsplit("/", 1)[1][:-len(".json")]
        assert (uuid.UUID(stem).version, uuid.UUID(stem).variant) == (4, uuid.RFC_4122), label


def test_eees_record_of_a_calibration_config_without_an_interval():
    run = RunRecord(Path("/runs/r1"), "job", "h", "finished", None, None, [])
    cfg = _config(spec=None, method="oracle", created=None, software=None, headline={}, samples=[_sample()],
                  reduced={"s1": 1.0}, table={"ci_low": None, "ci_high": 0.5})
    path, agg, _ = eee.records(run, cfg)
    assert path.startswith("data/aer/emocaustics/oracle/") and agg["retrieved_timestamp"] == "0"
    assert agg["evaluation_id"] == "aer/emocaustics/oracle/0" and agg["evaluation_timestamp"] == ""
    result = agg["evaluation_results"][0]
    assert result["score_details"]["score"] == 0.0 and result["score_details"]["uncertainty"] == {"num_samples": 1}
    assert "metric_parameters" not in result["metric_config"]
    assert result["metric_config"]["evaluation_description"].endswith("(a failure counts 0)")
    assert agg["eval_library"]["version"] == "unknown" and agg["eval_library"]["additional_details"] == {
        "prompts_version": "p1"}
    assert result["generation_config"]["generation_args"] == {}
    run = RunRecord(Path("/runs/r1"), "job", "h", "finished", "2026-12-01T09:00:00", None, [])
    assert eee.records(run, cfg)[1]["retrieved_timestamp"] == str(int(datetime.fromisoformat(
        "2026-12-01T09:00:00").timestamp()))


def test_an_instance_of_one_call():
    s = _sample(calls=[CALL], prompt_tokens=5, generated_tokens=1, seconds=0.25, cost_usd=0.5, llm_calls=1,
                cache_hits=1, judge={"model": "openai:j@http://h/v1", "calls": [{"text": "yes"}]})
    inst = eee._instance(_config(), s, "E", "M")
    raw = '{\n "q": "é"\n}'
    assert inst == {
        "schema_version": "0.3.0", "evaluation_id": "E", "model_id": "M", "evaluation_name": "aer",
        "evaluation_result_id": "accuracy", "sample_id": "s1",
        "sample_hash": hashlib.sha256((raw + "A").encode("utf-8")).hexdigest(), "interaction_type": "single_turn",
        "input": {"raw": raw, "reference": ["A"], "formatted": "system: be brief\n\nuser: q?"},
        "output": {"raw": ["A"]}, "messages": None,
        "answer_attribution": [{"turn_idx": 0, "source": "output.raw", "extracted_value": '{\n "answer": [\n  "A"\n ]\n}',
                                "is_terminal": True, "extraction_method": "json_schema"}],
        "evaluation": {"score": 1.0, "is_correct": True},
        "token_usage": {"input_tokens": 5, "output_tokens": 1, "total_tokens": 6},
        "performance": {"latency_ms": 250.0, "additional_details": {"llm_calls": "1", "cache_hits": "1",
                                                                    "cost_usd": "0.5"}},
        "error": None,
        "metadata": {"config": "aer_llm", "epoch": "1", "status": "ok", "metric.accuracy": "1.0",
                     "judge.model": "openai:j@http://h/v1", "judge.calls": '[{"text": "yes"}]'}}


def test_an_instance_of_several_calls_and_of_none():
    second = {"messages": [{"role": "user", "content": "again"}], "text": "B"}
    inst = eee._instance(_config(), _sample(calls=[CALL, second], score=0.5), "E", "M")
    assert inst["interaction_type"] == "multi_turn" and inst["output"] is None and "formatted" not in inst["input"]
    assert inst["messages"] == [{"turn_idx": 0, "role": "system", "content": "be brief"},
                                {"turn_idx": 1, "role": "user", "content": "q?"},
                                {"turn_idx": 2, "role": "assistant", "content": "A"},
                                {"turn_idx": 3, "role": "user", "content": "again"},
                                {"turn_idx": 4, "role": "assistant", "content": "B"}]
    assert inst["answer_attribution"][0]["turn_idx"] == 4
    assert inst["answer_attribution"][0]["source"] == "messages[4].content"
    assert inst["evaluation"] == {"score": 0.5, "is_correct": False, "num_turns": 5}
    none = eee._instance(_config(), _sample(status="failed", reason=None, score=None, prediction="p",
                                            calls=[]), "E", "M")
    assert none["output"] == {"raw": ["p"]} and none["answer_attribution"][0]["extraction_method"] == "calibration"
    assert none["evaluation"] == {"score": 0.0, "is_correct": False} and none["error"] == "failed"
    assert "token_usage" not in none and none["metadata"]["score_missing"] == "true"
    assert "judge.model" not in none["metadata"]
    empty = eee._instance(_config(), _sample(calls=[{"messages": None, "text": None}]), "E", "M")
    assert empty["output"] == {"raw": [""]} and empty["input"]["formatted"] == ""
    assert eee._instance(_config(), _sample(status="failed", reason="late"), "E", "M")["error"] == "late"
    assert eee._instance(_config(), _sample(score=1.0, status="failed"), "E", "M")["evaluation"]["is_correct"] is False
