"""The shipped AER job specs: they load with the job loader (every run's options parse, models exist), cover every
prompt x context mode, and every quickstart LLM run prepares on the published sample split and answers through a
schema-guided double with nothing unreadable, its prompts within the smoke window."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from emocaustics.core.task import ScoreContext, get_task, needs_model
from emocaustics.jobs.spec import load_job
from emocaustics.tasks.aer.solver import ANSWER_BUDGETS
from extract_doubles import SchemaLLM
from tasks.aer.aer_fixtures import KeywordEmbedder, published_root

JOBS = Path(__file__).resolve().parents[3] / "jobs"
TASK = get_task("aer")


def _runs(name: str):
    job = load_job(JOBS / name)
    return job, [(run, *run.resolve()) for run in job.expand()]


@pytest.mark.parametrize("name, split", [("aer-quickstart.yaml", "sample"), ("aer-test-grid.yaml", "test")])
def test_job_loads_and_covers_every_mode(name: str, split: str) -> None:
    job, runs = _runs(name)
    assert job.dataset_for(runs[0][0]) == {"split": split}
    modes = {(o.prompt, o.context) for _, t, o in runs if needs_model(t, o)}
    assert modes == {(p, c) for p in ("zero-shot", "few-shot", "cot") for c in ("none", "full", "retrieve")}
    assert {o.method for _, t, o in runs if not needs_model(t, o)} == {"oracle", "random", "all-options"}


def test_quickstart_runs_prepare_and_answer_on_sample() -> None:
    root = published_root()
    job, runs = _runs("aer-quickstart.yaml")
    window = job.models["smoke"].engine["max_model_len"]
    emb = KeywordEmbedder(["the", "of", "and", "police", "vote"])
    for _, task, opts in runs:
        if not needs_model(task, opts):
            continue
        assert opts.max_context_tokens <= window
        loaded = task.load(task.Dataset(split="sample", data=str(root), max_samples=30), opts)
        samples = task.prepare(loaded.samples, opts, ScoreContext(embedder=emb))
        assert max(s.meta["prompt_tokens_est"] for s in samples) + ANSWER_BUDGETS[opts.prompt] <= window
        llm = SchemaLLM()
        preds = [asyncio.run(task.solve(llm, s, opts)) for s in samples[:4]]
        assert len(llm.requests) == 4 * opts.samples and all(p["answer"] for p in preds)
