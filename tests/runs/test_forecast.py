"""The dry run's forecast against what the run sends: for every task and every context / extraction mode, the
`run --dry-run` row of a one-config job is held against the prompts the real solver path sends on the same samples.

"Actual" here is the run's own path without an engine: `Task.prepare` + the plan every task solves on
(`asolve_samples`, which writes each sample's prompt tokens to stats.jsonl), with `Double` for the model: schema-valid answers of random size and content (not the forecast's stand-in answers), each request's
prompt tokens counted by the smoke tokenizer with its chat template -- the same counter the dry run names for a
`smoke` model. Embeddings come from a seeded random embedder (not the dry run's stand-in), so retrieval picks other
passages than the forecast did.

Tolerance: calls and prompt tokens within 15 %. Exact for prompts that show no earlier answer; the rest (narrative
state lines, window buckets, chain context, emotion-chain merges) depend on the answers, which the forecast stands in.

Then against a real run (issue 41, 6): for every task and mode that calls a model, the same job run on the smoke
model through the real vLLM CPU engine (the session's `smoke_pool`, small splits) sends calls and prompt tokens within
15 % of the dry run's, and generates at most the forecast's generated tokens (the requests' own max_tokens), with 15 %
for retries.
"""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from emocaustics.core.task import ScoreContext, get_task, parse_options
from emocaustics.jobs.runner import plan_job
from emocaustics.jobs.spec import load_job
from emocaustics.models.base import ChatRequest, Completion
from emocaustics.models.spec import parse_llm_spec
from emocaustics.solve.forecast import counter_for

TOLERANCE = 0.15
SHARED = Path(__file__).resolve().parents[2] / ".." / "shared" / "datasets"


class Double:
    """The model in the 'actual' runs: a random schema-valid answer per request (seeded by its prompt)."""

    name = "double"

    def __init__(self) -> None:
        self.counter = counter_for(parse_llm_spec("smoke"))
        self.max_tokens = 0  # the requests' own generation limits, summed

    def value(self, schema: dict[str, Any], rng: random.Random) -> Any:
        if "enum" in schema:
            return rng.choice(schema["enum"])
        t = schema.get("type")
        if t == "object":
            return {k: self.value(v, rng) for k, v in schema.get("properties", {}).items()}
        if t == "array":
            n = rng.randint(schema.get("minItems", 0), min(schema.get("maxItems", 3), 6))
            return [self.value(schema["items"], rng) for _ in range(n)]
        if t == "string":
            n = rng.randint(0, schema.get("maxLength", 16))
            return "".join(rng.choice("情感事件原因abcdefghij klmnop") for _ in range(n))
        if t == "integer":
            return rng.randint(schema["minimum"], schema["maximum"]) if "maximum" in schema else 0
        raise AssertionError(f"unexpected schema node {schema}")

    async def generate(self, requests: list[ChatRequest]) -> list[Completion]:
        sizes = self.counter.count([r.messages for r in requests])
        out = []
        for r, n in zip(requests, sizes):
            self.max_tokens += r.sampling.max_tokens
            rng = random.Random(hashlib.sha256(json.dumps(r.messages).encode() + str(r.sampling.seed).encode())
                                .digest())
            v = self.value(r.schema, rng)
            out.append(Completion(text=json.dumps(v, ensure_ascii=False), parsed=v, prompt_tokens=n))
        return out


class RandomEmbedder:
    name = "test-random"

    async def embed(self, texts: list[str]) -> np.ndarray:
        m = np.random.default_rng(7).standard_normal((len(texts), 32)).astype(np.float32)
        return m / np.linalg.norm(m, axis=1, keepdims=True)


def dry_run_row(tmp_path: Path, dataset: dict[str, Any], run: dict[str, Any]) -> tuple[int, int, int]:
    """(LLM calls, prompt tokens, at most generated tokens) of the config's row in `run --dry-run` of a one-config
    job on the smoke model."""
    job = tmp_path / "job.yaml"
    job.write_text(json.dumps({"name": "fc", "dataset": dataset, "models": {"smoke": {"spec": "smoke"}},
                               "runs": [{**run, "model": "smoke"}]}), encoding="utf-8")
    spec = load_job(job)
    text = plan_job(spec, out=str(tmp_path / "run")).text
    label = spec.expand()[0].label
    row = next(line for line in text.splitlines() if line.startswith(f"| {label} |"))
    cells = [c.strip() for c in row.split("|")]
    assert "tokenizer of smoke" in text, text  # the counter is named, and it is the one used below
    return int(cells[6].replace(",", "")), int(cells[7].replace(",", "")), int(cells[8].replace(",", ""))


def solved_default(task_name: str, dataset: dict[str, Any], run: dict[str, Any], out: Path,
                   model: Double | None = None) -> tuple[int, int]:
    """(calls, prompt tokens) the default plan sends: prepare, then every sample's solve, stats from stats.jsonl."""
    from emocaustics.core import aio
    from emocaustics.solve.plan import asolve_samples

    task = get_task(task_name)
    opts = parse_options(task, run["options"])
    samples = task.load(task.Dataset.model_validate(dataset), opts).samples
    prepared = task.prepare(samples, opts, ScoreContext(embedder=RandomEmbedder()))
    aio.run(asolve_samples(task, prepared, opts, model or Double(), out))
    rows = [json.loads(line) for line in (out / "stats.jsonl").read_text().splitlines()]
    assert len(rows) == len(samples)
    return sum(r["llm_calls"] for r in rows), sum(r["prompt_tokens"] for r in rows)


def close(forecast: tuple[int, ...], actual: tuple[int, int], *, prompts: bool = True) -> None:
    for what, f, a in list(zip(("LLM calls", "prompt tokens"), forecast[:2], actual))[:2 if prompts else 1]:
        assert a > 0 and abs(f - a) <= TOLERANCE * a, f"{what}: forecast {f:,}, sent {a:,} ({f / a:.2f}x)"


def data_dir(name: str, probe: str) -> Path:
    root = SHARED / name
    if not (root / probe).exists():
        pytest.skip(f"the published {name} data is not in {root}")
    return root.resolve()


AER_MODES = [(p, c) for p in ("zero-shot", "few-shot", "cot") for c in ("none", "full", "retrieve")]


@pytest.mark.parametrize("prompt,context", AER_MODES, ids=[f"{p}-{c}" for p, c in AER_MODES])
def test_aer_forecast_holds_for_every_prompt_and_context(prompt, context, tmp_path):
    root = data_dir("aer", "sample_data/questions.jsonl")
    # 24 questions of the sample split (several topics); the smoke model's context, where `full` trims documents
    dataset = {"data": str(root), "split": "sample", "max_samples": 24}
    run = {"task": "aer", "options": {"method": "llm", "prompt": prompt, "context": context,
                                      "max_context_tokens": 8192, "chars_per_token": 0.8}}
    close(dry_run_row(tmp_path, {"aer": dataset}, run), solved_default("aer", dataset, run, tmp_path / "out"))


def test_aer_forecast_counts_every_self_consistency_sample(tmp_path):
    root = data_dir("aer", "sample_data/questions.jsonl")
    dataset = {"data": str(root), "split": "sample", "max_samples": 8}
    run = {"task": "aer", "options": {"method": "llm", "samples": 3, "max_context_tokens": 8192,
                                      "chars_per_token": 0.8}}
    close(dry_run_row(tmp_path, {"aer": dataset}, run), solved_default("aer", dataset, run, tmp_path / "out"))


def test_generated_tokens_are_the_requests_own_max_tokens(tmp_path):
    """Issue 41 (6): the dry run's generated tokens are what the requests themselves allow (each one's max_tokens,
    as the task sets it from the answer schema), an upper bound on what a model generates; not a per-task guess
    (150 per AER call, where the requests allow 42)."""
    root = data_dir("aer", "sample_data/questions.jsonl")
    dataset = {"data": str(root), "split": "sample", "max_samples": 8}
    run = {"task": "aer", "options": {"method": "llm", "samples": 3, "max_context_tokens": 8192,
                                      "chars_per_token": 0.8}}
    model = Double()
    forecast = dry_run_row(tmp_path, {"aer": dataset}, run)
    close(forecast, solved_default("aer", dataset, run, tmp_path / "out", model))
    assert forecast[2] == model.max_tokens > 0


@pytest.mark.parametrize("method", ["direct", "utterance"])
def test_ecpe_forecast_holds(method, tmp_path):
    root = data_dir("ecac", "Subtask_1_test.json")
    dataset = {"data": str(root), "ids": [1401, 1424, 1463, 1628]}
    run = {"task": "ecpe", "options": {"method": method}}
    close(dry_run_row(tmp_path, {"ecpe": dataset}, run), solved_default("ecpe", dataset, run, tmp_path / "out"))


@pytest.mark.parametrize("window", [3, 6])
def test_narrative_forecast_holds(window, tmp_path):
    run = {"task": "narrative", "options": {"method": "llm", "window_sentences": window}}
    close(dry_run_row(tmp_path, {"narrative": {}}, run), solved_default("narrative", {}, run, tmp_path / "out"))


EMO_MODES = [("sextuple", "direct"), ("sextuple", "rag"), ("sextuple", "window"), ("emotion", "direct"),
             ("emotion", "window")]


@pytest.mark.parametrize("task_name,method", EMO_MODES, ids=[f"{t}-{m}" for t, m in EMO_MODES])
def test_emocaustics_forecast_holds_for_every_extraction_method(task_name, method, tmp_path, monkeypatch):
    import emocaustics.models.embedders as embedders
    from emocaustics.core import aio
    from emocaustics.solve.plan import asolve_samples

    run = {"task": task_name, "method": method}
    forecast = dry_run_row(tmp_path, {"subset": "sample"}, run)
    task = get_task(task_name)
    opts = parse_options(task, {"method": method})
    samples = task.load(task.Dataset.model_validate({"subset": "sample"}), opts).samples
    monkeypatch.setattr(embedders, "make_embedder", lambda spec, **kw: RandomEmbedder())  # the plan's feed embeds here
    (tmp_path / "out").mkdir()
    rows = aio.run(asolve_samples(task, samples, opts, Double(), tmp_path / "out", embedder_spec="random"))
    assert all(r["ok"] for r in rows), [r["reason"] for r in rows if not r["ok"]]
    # A window's prompts show earlier answers (event buckets, sextuple records, chains): their size is the model's,
    # and Double's random answers (half their bounds on average) are no model's; the real run below holds them.
    close(forecast, (sum(r["stats"]["llm_calls"] for r in rows), sum(r["stats"]["prompt_tokens"] for r in rows)),
          prompts=method != "window")


def test_a_local_model_folder_is_counted_with_its_own_tokenizer_and_chat_template(tmp_path):
    """`vllm:<folder>` (as a cached hub snapshot is): tokenizer.json and the chat template of tokenizer_config.json,
    counted as transformers renders and tokenizes the chat; an endpoint falls back to the named heuristic."""
    from transformers import AutoTokenizer

    from emocaustics.models import smoke

    smoke._train_tokenizer(smoke.training_text(), tmp_path)  # a Hugging Face tokenizer folder with a chat template
    counter = counter_for(parse_llm_spec(f"vllm:{tmp_path}"))
    assert counter.name == f"tokenizer of {tmp_path}, with its chat template"
    msgs = ({"role": "system", "content": "你是一名专家。"}, {"role": "user", "content": 'Hello, 今天 {"a": 1}'})
    ids = AutoTokenizer.from_pretrained(tmp_path).apply_chat_template(list(msgs), add_generation_prompt=True)
    ids = ids["input_ids"] if hasattr(ids, "keys") else ids
    assert counter.count([msgs]) == [len(ids)] == counter_for(parse_llm_spec("smoke")).count([msgs])
    assert counter_for(parse_llm_spec("openai:gpt-4o@http://localhost:1/v1")).name.startswith("approx_tokens heuristic")


# -- against a real run: the smoke model on the real vLLM CPU engine -------------------------------------------------
AER_RUNS = [{"task": "aer", "model": "smoke", "options": {"method": "llm", "prompt": p, "context": c,
                                                         "max_context_tokens": 8192, "chars_per_token": 0.8}}
            for p, c in AER_MODES]
ENGINE_JOBS: dict[str, dict[str, Any]] = {  # one job per task family, every mode that calls a model, small splits
    # three questions of topic 7, the smallest (retrieve embeds every chunk of a topic); self-consistency too
    "aer": {"dataset": {"aer": {"data": str(SHARED / "aer"), "split": "sample", "ids": ["q-3", "q-7", "q-12"]}},
            "runs": AER_RUNS + [{**AER_RUNS[0], "name": "aer_sc3",
                                 "options": {**AER_RUNS[0]["options"], "samples": 3}}]},
    "ecpe": {"dataset": {"ecpe": {"data": str(SHARED / "ecac"), "ids": [1401, 1424]}},
             "runs": [{"task": "ecpe", "model": "smoke", "options": {"method": m}} for m in ("direct", "utterance")]},
    "narrative": {"dataset": {"narrative": {}}, "select": {"limit": 3},
                  "runs": [{"task": "narrative", "model": "smoke", "name": f"narrative_w{w}",
                            "options": {"method": "llm", "window_sentences": w}} for w in (3, 6)]},
    # emotion window builds on the job's sextuple window config, as in the shipped jobs
    "emocaustics": {"dataset": {"subset": "sample"}, "select": {"limit": 2},
                    "runs": [{"task": t, "method": m, "model": "smoke"} for t, m in EMO_MODES]},
}


def _forecast_rows(text: str) -> dict[str, tuple[int, int, int]]:
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.split("|")[1:-1]]
        if len(cells) == 9 and cells[5][:1].isdigit() and cells[0] != "config":
            rows[cells[0]] = tuple(int(c.replace(",", "")) for c in cells[5:8])
    return rows


@pytest.fixture(scope="module")
def engine_runs(smoke_pool, tmp_path_factory):
    """Per family: (the dry run's rows, what the real run sent per config: calls with cache hits, prompt tokens,
    generated tokens), each job on the session's smoke engine with a fresh response cache."""
    import contextlib
    import io

    import polars as pl

    from emocaustics.jobs.runner import run_job
    from emocaustics.jobs.spec import JobSpec

    for probe in ("aer/sample_data/questions.jsonl", "ecac/Subtask_1_test.json"):
        if not (SHARED / probe).exists():
            pytest.skip(f"the published data is not in {SHARED}")
    tmp = tmp_path_factory.mktemp("forecast-engine")
    out = {}
    for family, raw in ENGINE_JOBS.items():
        job = JobSpec.model_validate({"name": f"fc-{family}", "models": {"smoke": {"spec": "smoke"}},
                                      "scoring": {"judge": "none"}, "cache_dir": str(tmp / family / "cache"), **raw})
        plan = plan_job(job, out=str(tmp / family / "run"))
        assert not plan.problems, plan.text
        with contextlib.redirect_stdout(io.StringIO()):
            run_dir = run_job(job, out=str(tmp / family / "run"), check=False)
        scores = pl.read_parquet(run_dir / "scores.parquet")
        sums = scores.group_by("run").agg(pl.col("llm_calls", "cache_hits", "prompt_tokens", "generated_tokens")
                                          .sum())
        actual = {r["run"]: (r["llm_calls"] + r["cache_hits"], r["prompt_tokens"], r["generated_tokens"])
                  for r in sums.iter_rows(named=True)}
        out[family] = (_forecast_rows(plan.text), actual)
    return out


@pytest.mark.engine
@pytest.mark.slow
@pytest.mark.parametrize("family", list(ENGINE_JOBS))
def test_the_forecast_holds_against_a_real_run_for_every_task_and_mode(engine_runs, family):
    """Issue 41 (6): for every mode that calls a model, the dry run's calls and prompt tokens are within 15 % of what
    the real run sent (the smoke model's own answers, the real embedder), and its generated tokens bound what the
    model generated (within 15 %: retries of unreadable answers are not forecast)."""
    forecast, actual = engine_runs[family]
    assert forecast and set(forecast) <= set(actual), (forecast, actual)
    off = []
    for label, (calls, prompt, generated) in sorted(forecast.items()):
        a_calls, a_prompt, a_generated = actual[label]
        for what, f, a in (("calls", calls, a_calls), ("prompt tokens", prompt, a_prompt)):
            if not (a > 0 and abs(f - a) <= TOLERANCE * a):
                off.append(f"{label}: {what}: forecast {f:,}, sent {a:,} ({f / max(a, 1):.2f}x)")
        if a_generated > (1 + TOLERANCE) * generated:
            off.append(f"{label}: generated tokens: at most {generated:,} forecast, {a_generated:,} generated")
    assert not off, "\n".join(off)


def test_a_resume_forecasts_each_epochs_samples_left_and_nothing_for_an_epoch_with_none(monkeypatch):
    """jobs/preflight._forecast: a resume's per-epoch samples are forecast, an epoch with none left adds 0 without a
    forecast of no samples, and epochs with the same samples are forecast once."""
    from types import SimpleNamespace

    from emocaustics.jobs import preflight
    from emocaustics.solve import forecast as forecast_module

    asked = []

    def forecast(task, samples, options, counter, prior):
        asked.append([s.id for s in samples])
        n = len(samples)
        return n, 10 * n, 3 * n, n, 10 * n  # calls, prompt, generated, live calls, live prompt tokens

    monkeypatch.setattr(forecast_module, "forecast", forecast)
    monkeypatch.setattr(forecast_module, "counter_for", lambda llm: "counter")
    a, b = SimpleNamespace(id="a"), SimpleNamespace(id="b")
    cfg = SimpleNamespace(model="m", llm=None, task=None, options=None, prior=None, epochs=3)
    got = SimpleNamespace(samples=[a, b])
    assert preflight._forecast(cfg, got, {}) == [6, 60, 18, 6, 60] and asked == [["a", "b"]]
    asked.clear()
    assert preflight._forecast(cfg, got, {}, [[a], [], [a]]) == [2, 20, 6, 2, 20] and asked == [["a"]]
    asked.clear()
    assert preflight._forecast(cfg, got, {}, [[], [], []]) == [0] * 5 and asked == []
