"""What `exports.source.read_run` decides when it reads a finished run folder back for an export (issue 53's mutation
area `exports`): which files it reads (configs.json, scores.parquet, rows.parquet, summary.csv, run.json, each
config's provenance.json, the eval log), one record per sample and epoch (scores.parquet's epoch rows and each epoch's
eval log `LABEL.epoch-E`) beside each sample's reduced score, the headline and its interval as summary.csv has them,
a task file's task found from the file its provenance recorded, and a missing or damaged file as one `UsageError`
naming the file (and the config, or the eval-log line).

Fast: the run folders are written here by hand in tmp_path (the eval log's staged lines as the writer stages them,
compacted and finished by the real `evallog.writer.EvalLog` without its child process); no Ray, no engine. Every
expected value is the one written into the folder.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from emocaustics.core.errors import UsageError
from emocaustics.core.records import Sample
from emocaustics.core.task import Failure
from emocaustics.evallog.record import text_hash
from emocaustics.evallog.writer import EvalLog
from emocaustics.exports.source import _num, read_run

SPEC = "openai:Qwen/Q7@http://h:8/v1"
SOFTWARE = {"emocaustics": "1.2", "git": {"commit": "abc", "dirty": False}}
ONCE, EPOCHS, CALIB = "aer_llm", "aer_ep", "ecpe_oracle"


def _call(seq: int, prompt: str, answer: str, start: float = 0.5) -> tuple[dict[str, Any], dict[str, str]]:
    """A staged call as `Recorder.to_json` makes it (messages by the hashes of their text) and the texts it brings."""
    texts = {text_hash(prompt): prompt}
    call = {"seq": seq, "start": start, "latency": 0.25, "sampling": {"temperature": 0.0}, "prompt_tokens": 3,
            "generated_tokens": 1, "cached": False, "repaired": False, "error": None, "step": "ask", "attempt": 0,
            "parse_error": None, "messages": [["user", [text_hash(prompt)]]], "schema": None, "text": answer,
            "parsed": json.dumps(answer)}
    return call, texts


def _stage(run: Path, label: str, sid: str, attempt: str, finished: float, *, ok: bool = True,
           step: str | None = None, reason: str | None = None, calls: list[tuple[str, str]] = (),
           stats: dict[str, Any] | None = None) -> None:
    """One line of `evallog/staging/LABEL.jsonl`: a finished attempt of a sample and its calls."""
    made = [_call(i, p, a) for i, (p, a) in enumerate(calls)]
    texts = {h: t for _, got in made for h, t in got.items()}
    row = {"sample_id": sid, "attempt": attempt, "finished": finished, "ok": ok, "step": step, "reason": reason,
           "replica": "r0", "calls": [c for c, _ in made], "stats": json.dumps(stats or {}), "prompts": True,
           "texts": texts}
    path = run / "evallog" / "staging" / f"{label}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(row) + "\n")


def _finish(run: Path, label: str, inputs: dict[str, Any], predictions: dict[str, Any]) -> None:
    """The config's end: the staged lines compacted, each sample's input, gold and prediction written."""
    samples = [Sample(sid, {"q": text}, f"gold-{sid}") for sid, text in inputs.items()]
    EvalLog(run, secrets=[]).config(label).finish(samples, predictions)


def _score(label: str, task: str, sid: str, score: float | None, epoch: int | None = None, **kw: Any) -> dict:
    return {"run": label, "task": task, "sample_id": sid, "score": score, "failed": kw.pop("failed", False),
            "status": kw.pop("status", "ok"), "reason": kw.pop("reason", None), "epoch": epoch, **kw}


def _provenance(run: Path, label: str, task: str, **kw: Any) -> None:
    folder = run / "predictions" / label
    folder.mkdir(parents=True, exist_ok=True)
    rec = {"task": task, "samples": {"s1": "fp1", "s2": "fp2"}, "dataset": {"split": "dev"},
           "dataset_info": {"dataset": "semeval"}, "software": SOFTWARE, "created": "2026-12-01T10:00:00+00:00",
           "prompts_version": "p-prov", **kw}
    (folder / "provenance.json").write_text(json.dumps(rec), encoding="utf-8")


def _run_folder(tmp_path: Path) -> Path:
    """Three configs: `aer_llm` solved once by model `api` (s1 answered on its second attempt and judged, s2 failed),
    `aer_ep` solved in 2 epochs reduced by max (s1 wrong then right, s2 right twice), and `ecpe_oracle`, a
    calibration config with no eval log of its own."""
    run = tmp_path / "run"
    run.mkdir()
    configs = [
        {"run": ONCE, "task": "aer", "method": "llm", "model": "api", "options": {"method": "llm", "prompt": "zs"},
         "summary": {"score": 0.5, "n": 2}},
        {"run": EPOCHS, "task": "aer", "method": "llm", "model": "api", "options": {"method": "llm"},
         "summary": {"score": 0.75, "reducer": "max"}, "prompts_version": "p-cfg"},
        {"run": CALIB, "task": "ecpe", "method": "oracle", "summary": {"reducer": "max"}},
    ]
    (run / "configs.json").write_text(json.dumps(configs), encoding="utf-8")
    (run / "run.json").write_text(json.dumps({
        "job": "exports-job", "hash": "h4sh", "state": "finished", "started": "2026-12-01T09:00:00",
        "finished": "2026-12-01T11:00:00", "fields": {"models": {"api": {"spec": SPEC}}}}), encoding="utf-8")
    cost = {"prompt_tokens": 6, "generated_tokens": 2, "seconds": 1.5, "cost_usd": 0.25, "llm_calls": 2,
            "cache_hits": 1}
    scores = [
        _score(ONCE, "aer", "s1", 1.0, c_f1=0.5, **cost),
        _score(ONCE, "aer", "s2", None, c_f1=None, failed=True, status="failed", reason="timeout"),
        _score(EPOCHS, "aer", "s1", 0.0, 1, c_f1=0.0), _score(EPOCHS, "aer", "s2", 1.0, 1, c_f1=1.0),
        _score(EPOCHS, "aer", "s1", 1.0, 2, c_f1=0.25), _score(EPOCHS, "aer", "s2", 1.0, 2, c_f1=1.0),
        _score(EPOCHS, "aer", "s1", 1.0, c_f1=0.25), _score(EPOCHS, "aer", "s2", 1.0, c_f1=1.0),
        _score(CALIB, "ecpe", "1401", 0.5, c_x=0.125),
    ]
    pl.DataFrame(scores, infer_schema_length=None).write_parquet(run / "scores.parquet")
    rows = [(ONCE, "s1", "f1", 0.5), (ONCE, "s1", "score", 1.0), (EPOCHS, "s1", "score", 1.0),
            (EPOCHS, "s1", "f1", 0.25), (CALIB, "1401", "strict_f1", 0.5), (CALIB, "1401", "x", 0.125)]
    pl.DataFrame(rows, schema=["run", "sample_id", "metric", "value"], orient="row").write_parquet(run / "rows.parquet")
    pl.DataFrame([{"run": ONCE, "score": 0.5, "ci_low": 0.1, "ci_high": 0.9, "samples": 2},
                  {"run": EPOCHS, "score": 1.0, "ci_low": 0.8, "ci_high": 1.0, "samples": 2},
                  {"run": CALIB, "score": 0.5, "ci_low": 0.5, "ci_high": 0.5, "samples": 1}]).write_csv(
        run / "summary.csv")
    for label, task in ((ONCE, "aer"), (EPOCHS, "aer"), (CALIB, "ecpe")):
        _provenance(run, label, task)
    _stage(run, ONCE, "s1", "a1", 100.0, ok=False, step="parse", reason="bad json", calls=[("q1?", "junk")])
    _stage(run, ONCE, "s1", "a2", 200.0, calls=[("q1?", "A"), ("sure?", "yes")])
    _stage(run, ONCE, "s1", "a2.judge", 250.0, step="judge", calls=[("grade", "ok")],
           stats={"model": "openai:j@http://h/v1", "seconds": 2.0})
    _stage(run, ONCE, "s2", "a2", 300.0, ok=False, step="solve", reason="timeout")
    _finish(run, ONCE, {"s1": "one", "s2": "two"}, {"s1": "A", "s2": Failure("solve", "timeout")})
    for epoch, answers in ((1, {"s1": "B", "s2": "A"}), (2, {"s1": "A", "s2": "A"})):
        label = f"{EPOCHS}.epoch-{epoch}"
        for n, (sid, answer) in enumerate(answers.items()):
            _stage(run, label, sid, f"e{epoch}", 1000.0 * epoch + n, calls=[(f"{sid}?", answer)])
        _finish(run, label, {"s1": "one", "s2": "two"}, answers)
    return run


@pytest.fixture
def run(tmp_path: Path) -> Path:
    return _run_folder(tmp_path)


def _by_label(run: Path) -> dict[str, Any]:
    return {c.label: c for c in read_run(run).configs}


# -- the run ---------------------------------------------------------------------------------------------------
def test_the_run_as_run_json_records_it(run):
    got = read_run(str(run))
    assert (got.dir, got.job, got.hash, got.state) == (run, "exports-job", "h4sh", "finished")
    assert (got.started, got.finished) == ("2026-12-01T09:00:00", "2026-12-01T11:00:00")
    assert [c.label for c in got.configs] == [ONCE, EPOCHS, CALIB]  # configs.json's order


def test_a_run_without_run_json_is_named_by_its_folder(run):
    (run / "run.json").unlink()
    got = read_run(run)
    assert (got.job, got.hash, got.state, got.started, got.finished) == ("run", "", "unknown", None, None)
    assert [c.spec for c in got.configs] == [None, None, None]  # the model's spec is run.json's


# -- one config solved once --------------------------------------------------------------------------------------
def test_a_config_solved_once(run):
    cfg = _by_label(run)[ONCE]
    assert (cfg.task, cfg.method, cfg.model, cfg.spec) == ("aer", "llm", "api", SPEC)
    assert cfg.options == {"method": "llm", "prompt": "zs"} and cfg.summary == {"score": 0.5, "n": 2}
    assert (cfg.dataset, cfg.dataset_info) == ({"split": "dev"}, {"dataset": "semeval"})  # provenance.json's
    assert (cfg.software, cfg.created) == (SOFTWARE, "2026-12-01T10:00:00+00:00")
    assert cfg.prompts_version == "p-prov"  # configs.json has none: the provenance's
    assert (cfg.epochs, cfg.reducer) == (1, None)
    assert cfg.sample_metric == "score"  # the task's primary, first among the metrics though rows.parquet had f1 first
    assert cfg.table == {"run": ONCE, "score": 0.5, "ci_low": 0.1, "ci_high": 0.9, "samples": 2}
    assert cfg.headline == {"run": ONCE, "task": "aer", "samples": 2, "score": 0.5, "failures": 1}
    assert cfg.value == 0.5 and cfg.reduced == {"s1": 1.0, "s2": None}
    assert [(s.id, s.epoch) for s in cfg.samples] == [("s1", 1), ("s2", 1)]


def test_each_sample_of_a_config_solved_once(run):
    s1, s2 = _by_label(run)[ONCE].samples
    assert (s1.input, s1.target, s1.prediction, s1.status, s1.reason) == ({"q": "one"}, "gold-s1", "A", "ok", None)
    assert (s1.score, s1.metrics) == (1.0, {"score": 1.0, "f1": 0.5})
    assert (s1.prompt_tokens, s1.generated_tokens, s1.seconds, s1.cost_usd, s1.llm_calls, s1.cache_hits) == (
        6, 2, 1.5, 0.25, 2, 1)
    assert s1.finished == 200.0  # the latest solve attempt's end, not the failed first one's nor the judge's
    assert [(c["text"], c["messages"]) for c in s1.calls] == [  # the latest attempt's calls, their texts resolved
        ("A", [{"role": "user", "content": "q1?"}]), ("yes", [{"role": "user", "content": "sure?"}])]
    assert (s1.judge["model"], s1.judge["seconds"], s1.judge["finished"]) == ("openai:j@http://h/v1", 2.0, 250.0)
    assert [c["text"] for c in s1.judge["calls"]] == ["ok"]
    assert not s1.failed
    assert (s2.status, s2.reason, s2.prediction, s2.score, s2.metrics) == (
        "failed", "timeout", None, None, {"score": None, "f1": None})
    assert (s2.prompt_tokens, s2.seconds, s2.cost_usd, s2.llm_calls, s2.finished, s2.calls, s2.judge) == (
        0, 0.0, None, 0, 300.0, [], None)
    assert s2.failed and s2.input == {"q": "two"} and s2.target == "gold-s2"


def test_a_status_or_reason_the_score_table_lacks_is_the_eval_logs(run):
    scores = pl.read_parquet(run / "scores.parquet")
    scores.with_columns(status=pl.lit(None, pl.String), reason=pl.lit(None, pl.String)).write_parquet(
        run / "scores.parquet")
    got = _by_label(run)
    s1, s2 = got[ONCE].samples
    assert (s1.status, s1.reason, s2.status, s2.reason) == ("ok", None, "failed", "solve: timeout")
    assert (got[CALIB].samples[0].status, got[CALIB].samples[0].reason) == ("ok", None)  # no log either: ok


def test_the_score_tables_status_and_reason_come_before_the_eval_logs(run):
    scores = pl.read_parquet(run / "scores.parquet")
    scorer_failed = (pl.col("run") == ONCE) & (pl.col("sample_id") == "s1")  # solved, but its answer failed scoring
    scores.with_columns(status=pl.when(scorer_failed).then(pl.lit("failed")).otherwise("status"),
                        reason=pl.when(scorer_failed).then(pl.lit("unparsable")).otherwise("reason")).write_parquet(
        run / "scores.parquet")
    s1 = _by_label(run)[ONCE].samples[0]
    assert (s1.status, s1.reason, s1.failed) == ("failed", "unparsable", True)


def test_a_number_is_a_finite_float_or_none():
    assert [_num(v) for v in (2, 0.5, float("nan"), "1", None)] == [2.0, 0.5, None, None, None]
    assert type(_num(2)) is float


# -- a config solved in epochs -----------------------------------------------------------------------------------
def test_a_config_in_epochs_is_one_record_per_sample_and_epoch(run):
    cfg = _by_label(run)[EPOCHS]
    assert (cfg.epochs, cfg.reducer, cfg.prompts_version) == (2, "max", "p-cfg")
    assert [(s.id, s.epoch, s.prediction, s.score) for s in cfg.samples] == [
        ("s1", 1, "B", 0.0), ("s2", 1, "A", 1.0), ("s1", 2, "A", 1.0), ("s2", 2, "A", 1.0)]
    assert [s.metrics for s in cfg.samples] == [{"score": 0.0, "f1": 0.0}, {"score": 1.0, "f1": 1.0},
                                                {"score": 1.0, "f1": 0.25}, {"score": 1.0, "f1": 1.0}]
    assert [s.finished for s in cfg.samples] == [1000.0, 1001.0, 2000.0, 2001.0]  # each epoch's own log
    assert [s.calls[0]["text"] for s in cfg.samples] == ["B", "A", "A", "A"]
    assert cfg.reduced == {"s1": 1.0, "s2": 1.0}


def test_the_headline_of_epochs_and_its_interval_are_summary_csvs(run):
    cfg = _by_label(run)[EPOCHS]
    # the mean of the reduced scores (1.0), not the mean over the epochs' rows (0.75, configs.json's summary)
    assert cfg.value == 1.0 and cfg.headline["samples"] == 2 and cfg.headline["failures"] == 0
    assert (cfg.table["score"], cfg.table["ci_low"], cfg.table["ci_high"]) == (1.0, 0.8, 1.0)


# -- a calibration config ----------------------------------------------------------------------------------------
def test_a_calibration_config_without_a_log_of_its_own(run):
    cfg = _by_label(run)[CALIB]
    assert (cfg.model, cfg.spec, cfg.options, cfg.epochs, cfg.reducer) == (None, None, {}, 1, None)
    # the primary (a corpus-level F1) is no per-sample metric: the first of rows.parquet's stands in
    assert cfg.sample_metric == "strict_f1"
    (s,) = cfg.samples
    assert (s.id, s.score, s.metrics, s.status) == ("1401", 0.5, {"strict_f1": 0.5, "x": 0.125}, "ok")
    assert (s.input, s.target, s.prediction, s.calls, s.finished, s.judge) == (None, None, None, [], None, None)
    assert (s.prompt_tokens, s.generated_tokens, s.seconds, s.llm_calls, s.cache_hits) == (0, 0, 0.0, 0, 0)


def test_a_config_with_no_long_rows_keeps_its_primary_metric(run):
    rows = pl.read_parquet(run / "rows.parquet")
    rows.filter(pl.col("run") != CALIB).write_parquet(run / "rows.parquet")
    cfg = _by_label(run)[CALIB]
    assert cfg.sample_metric == "weighted_strict_f1" and cfg.samples[0].metrics == {"weighted_strict_f1": 0.5}


def test_a_config_without_provenance_or_a_summary_row(run):
    (run / "predictions" / CALIB / "provenance.json").unlink()
    pl.read_csv(run / "summary.csv").filter(pl.col("run") != CALIB).write_csv(run / "summary.csv")
    cfg = _by_label(run)[CALIB]
    assert (cfg.dataset, cfg.dataset_info, cfg.software, cfg.created, cfg.prompts_version, cfg.table) == (
        {}, {}, None, None, None, {})


# -- a task file's task ------------------------------------------------------------------------------------------
def test_a_task_files_run_finds_its_task_from_the_recorded_file(run, tmp_path):
    from emocaustics.core import task as tasks

    (tmp_path / "caps.jsonl").write_text('{"qid": "1401", "answer": "Paris"}\n', encoding="utf-8")
    task_file = tmp_path / "caps.yaml"
    task_file.write_text("name: caps-source\ndataset: {path: caps.jsonl}\nfields: {id: qid, target: answer}\n"
                         "solver: {name: generate, prompt: 'Capital?'}\nscorer: {name: exact_match}\n",
                         encoding="utf-8")
    configs = json.loads((run / "configs.json").read_text(encoding="utf-8"))
    configs[2]["task"] = "caps-source"
    (run / "configs.json").write_text(json.dumps(configs), encoding="utf-8")
    _provenance(run, CALIB, "caps-source", dataset_info={"task_file": str(task_file)})
    rows = pl.read_parquet(run / "rows.parquet")
    rows.filter(pl.col("run") != CALIB).write_parquet(run / "rows.parquet")
    assert "caps-source" not in tasks.task_names()
    try:
        cfg = _by_label(run)[CALIB]
        assert cfg.task == "caps-source" and cfg.sample_metric == tasks.get_task("caps-source").report.primary_metric
    finally:
        tasks.unregister("caps-source")
        tasks._FILES.pop(task_file.resolve(), None)


# -- what is missing or damaged: one error naming the file --------------------------------------------------------
def test_no_run_folder(tmp_path):
    with pytest.raises(UsageError, match=r"nowhere: no such run folder$"):
        read_run(tmp_path / "nowhere")


@pytest.mark.parametrize("name, what", [
    ("configs.json", "each config's task, options and summary"), ("scores.parquet", "the per-sample scores"),
    ("rows.parquet", "the scorers' long rows: every metric of every sample"), ("summary.csv", "the score table")])
def test_a_missing_file_is_named_with_what_it_holds(run, name, what):
    (run / name).unlink()
    with pytest.raises(UsageError) as got:
        read_run(run)
    assert str(got.value) == (f"{run / name}: missing ({what}); export reads a finished run folder of "
                              "`emocaustics run`")


@pytest.mark.parametrize("name", ["scores.parquet", "rows.parquet", "summary.csv"])
def test_a_damaged_table_is_named(run, name):
    whole = (run / name).read_bytes()
    (run / name).write_bytes(whole[: len(whole) // 2] if name.endswith("parquet") else b"")
    with pytest.raises(UsageError, match=rf"^{run / name}: cannot be read \(\w+: .+\)$") as got:
        read_run(run)
    assert "\n" not in str(got.value)


def test_a_tables_error_is_its_first_line_cut_at_200_characters(run, monkeypatch):
    def damaged(path: Any) -> Any:
        raise ValueError("x" * 300 + "\nsecond line")

    monkeypatch.setattr(pl, "read_parquet", damaged)
    with pytest.raises(UsageError) as got:
        read_run(run)
    assert str(got.value) == f"{run / 'scores.parquet'}: cannot be read (ValueError: {'x' * 200})"


def test_configs_json_that_is_not_json_is_named(run):
    (run / "configs.json").write_text("[{", encoding="utf-8")
    with pytest.raises(UsageError, match=rf"^{run / 'configs.json'}: not valid JSON \(Expecting"):
        read_run(run)


@pytest.mark.parametrize("config, key", [({"task": "aer", "method": "llm"}, "run"),
                                         ({"run": "x", "method": "llm"}, "task"),
                                         ({"run": "x", "task": "aer", "method": ""}, "method"),
                                         ("aer_llm", "run")])
def test_a_config_without_its_run_task_or_method_is_named_by_number(run, config, key):
    configs = json.loads((run / "configs.json").read_text(encoding="utf-8"))
    (run / "configs.json").write_text(json.dumps([configs[0], config]), encoding="utf-8")
    with pytest.raises(UsageError) as got:
        read_run(run)
    assert str(got.value) == f"{run / 'configs.json'}: config 2: no `{key}`"


def test_an_eval_log_line_that_is_not_json_is_named_with_its_line(run):
    _stage(run, ONCE, "s1", "a3", 400.0)
    with (run / "evallog" / "staging" / f"{ONCE}.jsonl").open("a", encoding="utf-8") as fh:
        fh.write('{"sample_id": "s2", "att\n')
    with pytest.raises(UsageError) as got:
        read_run(run)
    assert str(got.value).startswith(f"{run / 'evallog' / 'staging' / ONCE}.jsonl:2: not an eval-log line (")
    assert str(got.value).endswith("(the run was killed while writing it? `emocaustics run --resume` rewrites the log)")


def test_a_run_without_its_eval_log_is_named(run):
    import shutil

    shutil.rmtree(run / "evallog")
    with pytest.raises(UsageError, match="no evallog/ folder"):
        read_run(run)


def test_a_provenance_that_is_not_json_is_named(run):
    (run / "predictions" / EPOCHS / "provenance.json").write_text("{", encoding="utf-8")
    with pytest.raises(UsageError, match=rf"{run / 'predictions' / EPOCHS / 'provenance.json'}: not valid JSON"):
        read_run(run)
