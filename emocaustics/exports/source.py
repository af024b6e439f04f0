"""A finished run folder as both exports see it, read through the run's own readers: `configs.json` and each
config's `provenance.json` (`core.provenance.read`), `run.json` (`jobs.rundir.read_run`), `summary.csv`,
`scores.parquet` and `rows.parquet`, and the eval log (`evallog.read.RunLog`: input, gold, prediction, status and
every call of each sample). A config solved in epochs is one record per sample and epoch (scores.parquet's per-epoch
rows, each epoch's eval log `LABEL.epoch-E`), beside each sample's reduced score; its headline is summary.csv's row,
as everywhere else. A task file's task (tasks/yamltask) is found from the file the run recorded. A file that is
missing or cannot be read is one `UsageError` naming it (and the line, for an eval-log line that is not JSON);
nothing is skipped.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from emocaustics.core.errors import UsageError


@dataclass
class SampleRecord:
    id: str
    input: Any
    target: Any
    prediction: Any
    status: str  # ok, failed, ...
    reason: str | None
    score: float | None  # the per-sample primary metric (scores.parquet's `score`) of this epoch
    metrics: dict[str, float | None]  # every per-sample metric (scores.parquet's `score` and `c_*`), the primary first
    calls: list[dict[str, Any]]  # the latest attempt's calls (evallog.read.RunLog.sample)
    prompt_tokens: int = 0
    generated_tokens: int = 0
    seconds: float = 0.0
    cost_usd: float | None = None
    llm_calls: int = 0
    cache_hits: int = 0
    finished: float | None = None  # when its latest attempt ended (epoch seconds); None for a calibration config
    epoch: int = 1  # which of the config's epochs (1 for a config solved once)
    judge: dict[str, Any] | None = None  # the scorer's judge calls, its model and time (evallog.read.RunLog.sample)

    @property
    def failed(self) -> bool:
        return self.status == "failed"


@dataclass
class ConfigRecord:
    label: str
    task: str
    method: str
    model: str | None  # the job's model key
    spec: str | None  # that model's spec (run.json), credentials already out of it
    options: dict[str, Any]
    dataset: dict[str, Any]
    dataset_info: dict[str, Any]
    sample_metric: str  # the per-sample metric in `SampleRecord.score` (the primary where it is per sample)
    summary: dict[str, Any]  # configs.json: corpus-level metrics, primary first (epochs: the mean over epochs)
    table: dict[str, Any]  # summary.csv's row: score, ci_low, ci_high, samples, failures, tokens, cost ...
    headline: dict[str, Any]  # scoring.headline.headline's row (samples, score, failures): summary.csv's, by definition
    prompts_version: str | None
    software: dict[str, Any] | None  # core.software at run time (None: a run made before it was recorded)
    created: str | None
    epochs: int = 1
    reducer: str | None = None  # how a sample's epochs become its score (scoring/reducers.py); None for one epoch
    samples: list[SampleRecord] = field(default_factory=list)  # one per sample and epoch, epoch by epoch
    reduced: dict[str, float | None] = field(default_factory=dict)  # each sample's score over its epochs

    @property
    def value(self) -> float | None:
        """The headline score (the mean of the reduced per-sample scores, failures 0): the number summary.csv, the
        report and the console give; its interval is `table`'s ci_low and ci_high."""
        return _num(self.headline.get("score"))


@dataclass
class RunRecord:
    dir: Path
    job: str
    hash: str
    state: str
    started: str | None
    finished: str | None
    configs: list[ConfigRecord]


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and value == value else None


def _need(path: Path, what: str) -> Path:
    if not path.is_file():
        raise UsageError(f"{path}: missing ({what}); export reads a finished run folder of `emocaustics run`")
    return path


def _frame(path: Path) -> Any:
    import polars as pl

    try:
        return pl.read_csv(path) if path.suffix == ".csv" else pl.read_parquet(path)
    except Exception as exc:  # a truncated or foreign file: one line naming it
        raise UsageError(f"{path}: cannot be read ({type(exc).__name__}: {str(exc).splitlines()[0][:200]})") from None


def read_run(run_dir: Path | str) -> RunRecord:
    from emocaustics.jobs.rundir import read_run as run_json

    folder = Path(run_dir)
    if not folder.is_dir():
        raise UsageError(f"{folder}: no such run folder")
    configs_path = _need(folder / "configs.json", "each config's task, options and summary")
    try:
        configs = json.loads(configs_path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise UsageError(f"{configs_path}: not valid JSON ({exc})") from None
    for i, rec in enumerate(configs):  # all of them first: the eval log's reader reads configs.json again
        for key in ("run", "task", "method"):
            if not isinstance(rec, dict) or not rec.get(key):
                raise UsageError(f"{configs_path}: config {i + 1}: no `{key}`")
    scores = _frame(_need(folder / "scores.parquet", "the per-sample scores"))
    rows = _frame(_need(folder / "rows.parquet", "the scorers' long rows: every metric of every sample"))
    table = _frame(_need(folder / "summary.csv", "the score table"))
    from emocaustics.scoring.headline import headline

    heads = {row["run"]: row for row in headline(scores).to_dicts()}
    record = run_json(folder) or {}
    out = RunRecord(folder, str(record.get("job") or folder.name), str(record.get("hash") or ""),
                    str(record.get("state") or "unknown"), record.get("started"), record.get("finished"), [])
    from emocaustics.evallog.read import RunLog

    from emocaustics.tasks.yamltask.recorded import register_run_tasks

    log = RunLog(folder)
    register_run_tasks(folder)
    models = ((record.get("fields") or {}).get("models") or {})
    out.configs = [_config(folder, r, models, scores, rows, table, log, heads.get(r["run"]) or {}) for r in configs]
    return out


def _config(folder: Path, rec: dict[str, Any], models: dict[str, Any], scores: Any, rows: Any, table: Any,
            log: Any, head: dict[str, Any]) -> ConfigRecord:
    import polars as pl

    from emocaustics.core.provenance import read as read_provenance
    from emocaustics.core.task import get_task
    from emocaustics.jobs.epochs import epoch_label
    from emocaustics.scoring.reducers import epoch_rows, table_rows

    label = rec["run"]
    prov = read_provenance(folder / "predictions" / label) or {}
    names = list(dict.fromkeys(rows.filter(pl.col("run") == label)["metric"].to_list()))
    primary = get_task(rec["task"]).report.primary_metric
    sample_metric = primary if primary in names or not names else names[0]  # as scoring.generic.per_sample does
    names = [sample_metric, *[n for n in names if n != sample_metric]]
    mine = scores.filter(pl.col("run") == label)
    reduced, per_epoch = table_rows(mine), epoch_rows(mine)
    epochs = per_epoch["epoch"].max() or 1 if per_epoch.height else 1
    row = table.filter(pl.col("run") == label).to_dicts()
    model = rec.get("model")
    cfg = ConfigRecord(
        label=label, task=rec["task"], method=rec["method"], model=model,
        spec=(models.get(model) or {}).get("spec") if model else None, options=rec.get("options") or {},
        dataset=prov.get("dataset") or {}, dataset_info=prov.get("dataset_info") or {},
        sample_metric=sample_metric, summary=rec.get("summary") or {}, table=row[0] if row else {}, headline=head,
        prompts_version=rec.get("prompts_version") or prov.get("prompts_version"), software=prov.get("software"),
        created=prov.get("created"), epochs=epochs, reducer=(rec.get("summary") or {}).get("reducer") if epochs > 1
        else None, reduced={str(s["sample_id"]): _num(s["score"]) for s in reduced.to_dicts()})
    for epoch in range(1, epochs + 1):
        logged = epoch_label(label, epoch, epochs)
        known = logged in log.labels()
        finished = dict(log.attempts(logged).select("sample_id", "finished").iter_rows()) if known else {}
        of_epoch = per_epoch.filter(pl.col("epoch") == epoch) if epochs > 1 else reduced
        for s in of_epoch.to_dicts():
            sid = str(s["sample_id"])
            got = log.sample(logged, sid) if known else {}
            cfg.samples.append(SampleRecord(
                id=sid, input=got.get("input"), target=got.get("target"), prediction=got.get("prediction"),
                status=str(s.get("status") or got.get("status") or "ok"), reason=s.get("reason") or got.get("reason"),
                score=_num(s.get("score")), metrics={n: _num(s.get("score" if n == sample_metric else f"c_{n}"))
                                                     for n in names},
                calls=got.get("calls") or [], prompt_tokens=int(s.get("prompt_tokens") or 0),
                generated_tokens=int(s.get("generated_tokens") or 0), seconds=float(s.get("seconds") or 0.0),
                cost_usd=_num(s.get("cost_usd")), llm_calls=int(s.get("llm_calls") or 0),
                cache_hits=int(s.get("cache_hits") or 0), finished=_num(finished.get(sid)), epoch=epoch,
                judge=got.get("judge")))
    if log.bad_lines:
        path, line, why = log.bad_lines[0]
        raise UsageError(f"{path}:{line}: not an eval-log line ({why}); export reads whole lines only (the run was "
                         "killed while writing it? `emocaustics run --resume` rewrites the log)")
    return cfg


def utc(epoch: float | None = None, iso: str | None = None) -> str:
    """An ISO 8601 time with its zone: from epoch seconds, or an ISO text as the run recorded it."""
    if epoch is not None:
        return datetime.fromtimestamp(epoch, timezone.utc).isoformat()
    if iso:
        got = datetime.fromisoformat(iso)
        return (got if got.tzinfo else got.replace(tzinfo=timezone.utc)).isoformat()
    return ""
