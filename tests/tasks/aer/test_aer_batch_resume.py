"""A batch job killed while a batch runs, then `--resume`: nothing is submitted twice (issue 32).

`emocaustics run JOB.yaml --out DIR` of AER with `batch: true` on an OpenAI and an Anthropic model (4 configs) runs as
a child process against the batch API stand-ins (tests/fakes/openai_batch.py, tests/fakes/anthropic_batch.py: OpenAI's
Batch API and Anthropic's Message Batches, which cannot be reached from here), served from threads of the test process
so that they outlive the child. The stand-ins keep their batches `in_progress`; the job's batch configs are solved
together (jobs/together.py), so every config's requests go into one batch per model (two), and once both sit with
the providers (and `batches.jsonl` beside the response cache names them) the child is SIGKILLed. Then the stand-ins
let batches complete at once, and `emocaustics run JOB.yaml --resume --out DIR` follows the killed run's batches
instead of sending their requests again: every request in exactly one batch, no live call, and tables identical to an
undisturbed live run's (cost aside: the batch price is half the live one).
No engine, no Ray.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import polars as pl
import pytest

from emocaustics.cli import main
from fakes.anthropic_batch import FakeAnthropicBatchServer
from fakes.child_run import cleanup, start_cli
from fakes.openai_batch import FakeOpenAIBatchServer
from tasks.aer.aer_fixtures import question, topic, write_dataset
from tasks.aer.test_aer_batch_jobs import JOB, _anthropic_answer, _openai_answer, _predictions

N = 6
KEYS = {"OPENAI_API_KEY": "sk-test-not-a-key", "ANTHROPIC_API_KEY": "sk-ant-test-not-a-key"}
VOLATILE = ("llm_calls", "cache_hits", "tokens", "seconds", "wall_s", "startup_s", "cost_usd", "note")


def _tables(run: Path) -> dict[str, pl.DataFrame]:
    def keep(df: pl.DataFrame) -> pl.DataFrame:
        cols = [c for c in df.columns if not any(c == v or c.endswith(v) for v in VOLATILE)]
        return df.select(cols).sort(cols[: min(2, len(cols))])

    out = {"scores": keep(pl.read_parquet(run / "scores.parquet")), "summary": keep(pl.read_csv(run / "summary.csv"))}
    for p in sorted((run / "tables").glob("*.parquet")):
        out[p.stem] = keep(pl.read_parquet(p))
    return out


def _submitted(cache: Path) -> list[dict]:
    path = cache / "batches.jsonl"
    if not path.exists():
        return []
    rows = []
    for raw in path.read_text(encoding="utf-8").splitlines():
        try:
            rows.append(json.loads(raw))
        except ValueError:
            pass  # a line being written
    return [r for r in rows if r.get("event") == "submitted"]


@pytest.mark.slow
def test_a_batch_job_killed_mid_batch_resumes_its_batches_and_submits_nothing_twice(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    for k, v in KEYS.items():
        monkeypatch.setenv(k, v)
    data = write_dataset(tmp_path / "data", {"sample": ([question(n, 1 + (n - 1) // 3, "A") for n in range(1, N + 1)],
                                                        [topic(1), topic(2)])})
    requests = 2 * 2 * N  # 2 prompts x 2 models x N questions
    with FakeOpenAIBatchServer(seed=4, validate_seconds=0.02, process_seconds=3600) as oa, \
            FakeAnthropicBatchServer(seed=5, process_seconds=3600, answer_text=_anthropic_answer) as an:
        oa.answer_text = _openai_answer  # type: ignore[method-assign]

        def job(mode: str) -> Path:
            path = tmp_path / f"{mode}.yaml"
            path.write_text(JOB.format(data=data, openai=oa.base_url, anthropic=an.base_url,
                                       batch=str(mode == "batch").lower(), cache=tmp_path / f"cache-{mode}",
                                       out=tmp_path / "runs"), encoding="utf-8")
            return path

        live = tmp_path / "live"
        assert main(["run", str(job("live")), "--out", str(live)]) == 0
        assert oa.chat_calls == an.live_calls == requests // 2 and oa.creates == an.creates == 0
        live_calls = (oa.chat_calls, an.live_calls)

        run, cache = tmp_path / "batch", tmp_path / "cache-batch"
        child = start_cli(["run", str(job("batch")), "--out", str(run)], logs=tmp_path / "logs", env=KEYS)
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and child.proc.poll() is None:
                rows = _submitted(cache)
                if sum(r["n"] for r in rows) == requests and len(rows) == oa.creates + an.creates:
                    break
                time.sleep(0.05)
            assert child.proc.poll() is None, f"the run ended before the kill: {child.output()[1][-2000:]}"
            # the four configs share one batch per model: the grid waits for one turnaround, not four
            assert sum(r["n"] for r in _submitted(cache)) == requests, child.output()[1][-2000:]
            assert oa.creates == an.creates == 1
            time.sleep(0.3)  # a few status polls of the in-progress batch
            child.kill_driver()
        finally:
            cleanup(child)
        killed = [r["batch_id"] for r in _submitted(cache)]
        assert oa.creates + an.creates == len(killed) == 2
        assert set(killed) <= set(oa.batches) | set(an.batches)
        assert all(b.final is None for b in oa.batches.values())  # killed while the batch was still running
        assert all(b.results is None for b in an.batches.values())
        assert not (run / "scores.parquet").exists()
        assert (oa.chat_calls, an.live_calls) == live_calls  # the killed run asked nothing live

        oa.process_seconds = an.process_seconds = 0.0  # the provider finishes the batches
        capsys.readouterr()
        assert main(["run", str(job("batch")), "--resume", "--out", str(run)]) == 0
        out = capsys.readouterr().out
        ids = [x["custom_id"] for x in oa.lines] + [x["custom_id"] for x in an.requests]
        assert len(ids) == len(set(ids)) == requests  # every request in exactly one batch: none submitted twice
        assert (oa.chat_calls, an.live_calls) == live_calls  # and none asked live
    assert out.count("resumed from batches.jsonl") == len(killed), out[-2000:]
    assert all(f"batch {b} " in out for b in killed)
    assert _predictions(run) == _predictions(live)
    tables, reference = _tables(run), _tables(live)
    assert tables.keys() == reference.keys()
    for name in reference:
        assert tables[name].equals(reference[name]), f"{name} differs:\n{tables[name]}\n{reference[name]}"
    scores = pl.read_parquet(run / "scores.parquet")
    assert 0 < scores["score"].sum() < len(scores)  # the answers differ by question
    cost = {m: {r["run"]: r["cost_usd"] for r in json.loads((p / "configs.json").read_text())}
            for m, p in (("live", live), ("batch", run))}
    for label, usd in cost["live"].items():
        assert usd > 0 and cost["batch"][label] == pytest.approx(usd / 2, rel=1e-3), label
    rows = [json.loads(x) for x in (cache / "batches.jsonl").read_text().splitlines()]
    assert sorted(r["batch_id"] for r in rows if r["event"] == "finished") == \
        sorted(r["batch_id"] for r in rows if r["event"] == "submitted")
