"""The shared response cache across runs (issue 42 point 2), through `emocaustics run` and `eval`: a second run of a
job with another scoring option, and an `eval` after a `run`, make no model call and cost nothing everywhere a cost or
a count is shown (stats.jsonl, scores.parquet, configs.json, summary.csv, the eval log) and spend no budget;
`--no-cache` asks again; two runs at once against one cache lose and duplicate nothing. The OpenAI-compatible
stand-in (tests/fakes) stands in for a remote API; EmoCaustics `sextuple` (direct) on two sample dialogues."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
import yaml

from emocaustics.cli import main
from emocaustics.evallog.read import RunLog
from emocaustics.view.data import ViewData
from fakes.openai_chat import FakeOpenAIServer

pytestmark = pytest.mark.slow

LABEL = "sextuple_direct_api"


def _job(tmp: Path, url: str, name: str, **extra: object) -> Path:
    job = {"name": name, "dataset": {"subset": "sample"}, "select": {"ids": ["1", "2"]},
           "models": {"api": {"spec": f"openai:fake-model@{url}", "concurrency": 8,
                              "price": {"input": 1.0, "output": 2.0}}},
           "runs": [{"task": "sextuple", "options": {"method": "direct"}, "model": "api"}],
           "scoring": {"judge": "none"}, **extra}
    path = tmp / f"{name}.yaml"
    path.write_text(yaml.safe_dump(job), encoding="utf-8")
    return path


def _eval_args(url: str, out: Path, *more: str) -> list[str]:
    return ["eval", "sextuple", "--model", f"openai:fake-model@{url}", "--method", "direct", "--split", "sample",
            "--ids", "1,2", "--judge", "none", "--allow-failures", "--out", str(out), *more]


def _stats(run: Path) -> dict[str, int]:
    """Every stats.jsonl row of the run's config, summed."""
    out: dict[str, int] = {}
    for line in (run / "predictions" / next(iter(os.listdir(run / "predictions"))) / "stats.jsonl").read_text() \
            .splitlines():
        for k, v in json.loads(line).items():
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                out[k] = out.get(k, 0) + v
    return out


def _entries() -> int:
    path = Path(os.environ["EMOCAUSTICS_RESPONSE_CACHE"]) / "responses.sqlite"
    with sqlite3.connect(path) as db:
        return int(db.execute("SELECT COUNT(*) FROM responses").fetchone()[0])


@pytest.fixture(autouse=True)
def _keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")


def test_a_rerun_with_another_scorer_option_and_an_eval_after_it_call_nothing_and_cost_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with FakeOpenAIServer() as server:
        first = tmp_path / "first"
        assert main(["run", str(_job(tmp_path, server.base_url, "first")), "--out", str(first),
                     "--allow-failures"]) == 0
        calls = len(server.bodies)
        assert calls > 0 and _stats(first)["llm_calls"] == calls
        assert json.loads((first / "configs.json").read_text())[0]["cost_usd"] > 0
        # another scoring option, and a budget any model call would cross (exit 6): a cached answer spends none
        second = tmp_path / "second"
        job = _job(tmp_path, server.base_url, "second", max_cost_usd=1e-9,
                   scoring={"judge": "none", "compat": "reference"})
        assert main(["run", str(job), "--out", str(second), "--allow-failures"]) == 0
        assert len(server.bodies) == calls  # not one model call
        stats = _stats(second)
        assert stats["llm_calls"] == 0 and stats["cache_hits"] == calls and stats.get("prompt_tokens", 0) == 0
        scores = pl.read_parquet(second / "scores.parquet")
        assert scores["llm_calls"].sum() == 0 and scores["cache_hits"].sum() == calls
        assert scores["cost_usd"].null_count() == 0 and scores["cost_usd"].sum() == 0.0
        assert json.loads((second / "configs.json").read_text())[0]["cost_usd"] == 0.0
        summary = pl.read_csv(second / "summary.csv")
        assert summary["cost_usd"].to_list() == [0.0] and summary["llm_calls"].to_list() == [0]
        logged = RunLog(second).calls(LABEL)
        assert logged.height == calls and logged["cached"].all()  # the eval log marks every call a cache hit
        table = ViewData(RunLog(second)).table(0)  # the viewer's list of samples counts the hits
        assert "cache_hits" in table["metrics"] and sum(r["cache_hits"] for r in table["rows"]) == calls
        record = json.loads((second / "run.json").read_text())["response_cache"]
        assert record["mode"] == "on" and record["path"] == str(Path(os.environ["EMOCAUSTICS_RESPONSE_CACHE"]) /
                                                                  "responses.sqlite")
        # `eval` of the same config after the runs: no call either
        assert main(_eval_args(server.base_url, tmp_path / "eval")) == 0
        assert len(server.bodies) == calls and _stats(tmp_path / "eval")["cache_hits"] == calls
        # --no-cache asks the model again, and the run says it had no cache
        assert main(_eval_args(server.base_url, tmp_path / "fresh", "--no-cache")) == 0
        assert len(server.bodies) == 2 * calls and _stats(tmp_path / "fresh")["llm_calls"] == calls
        assert json.loads((tmp_path / "fresh" / "run.json").read_text())["response_cache"] == {"mode": "off"}
    assert _entries() == len({json.dumps(b, sort_keys=True) for b in server.bodies})
    capsys.readouterr()


def test_two_runs_at_once_against_one_cache_lose_and_duplicate_nothing(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    with FakeOpenAIServer() as server:
        # `--no-score`: the race is over the cache, which solving fills; each child loading the embedder to score
        # what no assertion here reads cost seconds (the third run, below, scores)
        procs = [subprocess.Popen([sys.executable, "-m", "emocaustics",
                                   *_eval_args(server.base_url, tmp_path / n, "--no-score")],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=dict(os.environ))
                 for n in ("a", "b")]
        outs = [p.communicate(timeout=600)[0].decode() for p in procs]
        assert [p.returncode for p in procs] == [0, 0], outs
        asked = len(server.bodies)
        distinct = len({json.dumps(b, sort_keys=True) for b in server.bodies})
        per_run = [_stats(tmp_path / n) for n in ("a", "b")]
        # each run got an answer for every request, from the model or from the other run's entries
        assert {s["llm_calls"] + s["cache_hits"] for s in per_run} == {per_run[0]["llm_calls"] +
                                                                       per_run[0]["cache_hits"]}
        assert sum(s["llm_calls"] for s in per_run) == asked
        assert _entries() == distinct  # one entry per distinct request, however the two runs raced
        assert main(_eval_args(server.base_url, tmp_path / "c")) == 0
        assert len(server.bodies) == asked  # nothing lost: a third run is answered by the cache alone
    capsys.readouterr()
