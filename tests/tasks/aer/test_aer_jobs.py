"""The shipped AER job specs: every run's options parse, and every quickstart LLM run prepares on the published sample
split and answers through a schema-guided double with nothing unreadable, its prompts within the smoke window."""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path

import pytest
import yaml

from emocaustics.core.task import ScoreContext, get_task
from emocaustics.tasks.aer.solver import answer_budget
from extract_doubles import SchemaLLM
from tasks.aer.aer_fixtures import KeywordEmbedder, published_root

JOBS = Path(__file__).resolve().parents[3] / "jobs"
TASK = get_task("aer")


def _runs(name: str) -> list[dict]:
    spec = yaml.safe_load((JOBS / name).read_text())
    runs = [r for r in spec["runs"] if r["task"] == "aer"]
    grid = spec.get("grid")
    if grid:
        opts = grid["options"]
        keys = list(opts)
        for combo in itertools.product(*(opts[k] for k in keys)):
            runs.append({"task": "aer", "options": dict(zip(keys, combo)), "model": grid["model"][0]})
    return runs


@pytest.mark.parametrize("name", ["aer-quickstart.yaml", "aer-test-grid.yaml"])
def test_every_run_parses(name: str) -> None:
    runs = _runs(name)
    assert len(runs) >= 12
    modes = set()
    for r in runs:
        opts = TASK.parse_options(r["options"])
        if TASK.needs_model(opts):
            assert r.get("model")
            modes.add((opts.prompt, opts.context))
    assert modes == {(p, c) for p in ("zero-shot", "few-shot", "cot") for c in ("none", "full", "retrieve")}


def test_quickstart_runs_prepare_and_answer_on_sample() -> None:
    root = published_root()
    spec = yaml.safe_load((JOBS / "aer-quickstart.yaml").read_text())
    window = spec["models"]["smoke"]["engine"]["max_model_len"]
    emb = KeywordEmbedder(["the", "of", "and", "police", "vote"])
    for r in _runs("aer-quickstart.yaml"):
        opts = TASK.parse_options(r["options"])
        if not TASK.needs_model(opts):
            continue
        assert opts.max_context_tokens <= window
        loaded = TASK.load(TASK.Dataset(split="sample", data=str(root), max_samples=30), opts)
        samples = TASK.prepare(loaded.samples, opts, ScoreContext(embedder=emb))
        assert max(s.meta["prompt_tokens_est"] for s in samples) + answer_budget(opts.prompt) <= window
        llm = SchemaLLM()
        preds = [asyncio.run(TASK.solve(llm, s, opts)) for s in samples[:4]]
        assert len(llm.requests) == 4 * opts.samples and all(p["answer"] for p in preds)
