"""The dry run of a `batch: true` model (models/batch.py) marks which calls go through the batch API and which stay
live (the steps of a narrative's window chain: ChatRequest.live), and prices the batch calls at the batch price."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from emocaustics.jobs.runner import plan_job
from emocaustics.jobs.spec import load_job


def _row(tmp_path: Path, batch: bool, window: int) -> list[str]:
    job = tmp_path / f"job-{batch}-{window}.yaml"
    job.write_text(json.dumps({
        "name": "fc", "dataset": {"narrative": {}},
        "models": {"m": {"spec": "openai:gpt-4o-mini@http://127.0.0.1:9/v1", "batch": batch}},
        "runs": [{"task": "narrative", "model": "m", "options": {"method": "llm", "window_sentences": window}}]}),
        encoding="utf-8")
    spec = load_job(job)
    text = plan_job(spec, out=str(tmp_path / "run")).text
    label = spec.expand()[0].label
    row = next(line for line in text.splitlines() if line.startswith(f"| {label} |"))
    return [c.strip() for c in row.split("|")]


def _usd(cell: str) -> float:
    return float(cell.lstrip("$").replace(",", ""))


def test_dry_run_marks_batch_and_live_calls_and_prices_them(tmp_path: Path) -> None:
    live = _row(tmp_path, False, 10)
    batched = _row(tmp_path, True, 10)
    calls = int(live[6].replace(",", ""))
    assert "batch" not in live[6]
    head, _, split = batched[6].partition(" (")
    assert int(head.replace(",", "")) == calls
    n_batch, n_live = (int(part.split()[0].replace(",", "")) for part in split.rstrip(")").split(", "))
    assert n_batch + n_live == calls and n_live > 0 and n_batch > 0  # multi-window stories: their windows live
    assert _usd(live[9]) / 2 < _usd(batched[9]) < _usd(live[9])
    # one window per story: every call independent, all of them at the batch price
    whole = _row(tmp_path, True, 64)
    assert whole[6].endswith(" batch, 0 live)")
    assert _usd(_row(tmp_path, False, 64)[9]) == pytest.approx(2 * _usd(whole[9]), abs=1.5e-4)  # cents rounded
