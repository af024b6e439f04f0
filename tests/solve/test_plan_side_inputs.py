"""The one solving plan's general mechanisms, on a task defined here (only EmoCaustics' embedding feed reused): side
texts embedded beside the calls by the task's feed and read by the solver (`SideInputs.side_texts`, `feed`,
`Side.embeddings`), a config that builds on another's predictions (`builds_on` -> `read_prior` -> `solver_view`),
a missing prior failing without a call, the solver's own counts in stats.jsonl, and largest-first starts
(`Placement.size`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from emocaustics.core import aio
from emocaustics.core.task import Failure, JsonlStore, Methods, Options, Placement, Sample, Side, SolveFailed, Task
from emocaustics.models.base import Completion
from emocaustics.solve.plan import asolve_samples


class Echo:
    """A model that answers each request with its prompt, at once."""

    def __init__(self) -> None:
        self.prompts: list[str] = []

    async def generate(self, requests: list[Any]) -> list[Completion]:
        self.prompts += [r.messages[-1]["content"] for r in requests]
        return [Completion(text=r.messages[-1]["content"]) for r in requests]


class LengthEmbedder:
    """Stands in for the job's embedder: the vector of a text is [its length, 1]."""

    async def embed(self, texts: list[str]) -> np.ndarray:
        return np.array([[len(t), 1.0] for t in texts], dtype=np.float32)


class WordsSide:
    """The side inputs of `Words` (`core.contract.SideInputs`): its words embedded, a prior handed over in meta."""

    def side_texts(self, sample: Sample, options: Options) -> list[str] | None:
        return list(sample.input)

    async def feed(self, texts: dict[str, list[str]], options: Options, embedder_spec: str | None, in_process: bool,
                   marks: dict[str, float]) -> Any:
        from emocaustics.tasks.longdialogue.embedfeed import start_feed  # EmoCaustics' feed serves any task's texts

        return await start_feed(texts, embedder_spec, in_process, marks, ahead=True)

    def builds_on(self, options: Options, model: str | None, candidates: list) -> str | None:
        return None

    def read_prior(self, folder: Path, samples: list[Sample]) -> dict[str, Any]:
        found = JsonlStore().read_predictions(folder)
        return {s.id: found.get(s.id, Failure("input", f"no prediction of {s.id} in {folder}")) for s in samples}

    def solver_view(self, sample: Sample, options: Options, prior: Any = None) -> Sample:
        return sample if prior is None else Sample(sample.id, sample.input, sample.target, {"prior": prior})


class Words(Task):
    """Each sample is a list of words; the prediction is the longest word's embedding row, asked once of the model;
    with a prior, the prior's answer is prefixed."""

    name = "words-test"
    methods = Methods(solver=("ask",))
    side = WordsSide()

    def placement(self, sample: Sample, options: Options) -> Placement:
        return Placement(affinity=sample.id, size=len(sample.input))

    async def solve(self, llm: Any, sample: Sample, options: Options, side: Side) -> Any:
        """The one entry point, with the side inputs as its fourth argument (a task with side inputs)."""
        from emocaustics.models.base import ChatRequest

        rows = await side.embeddings.upto(len(sample.input))
        longest = sample.input[int(np.argmax(rows[:, 0]))]
        if longest == "boom":
            raise SolveFailed("pick", "a word the solver refuses")
        prompt = f"{sample.meta.get('prior', '')}{longest}"
        side.stats["picked"] = 1
        (answer,) = await llm.generate([ChatRequest(messages=({"role": "user", "content": prompt},))])
        return answer.text


def run(task: Task, samples: list[Sample], out: Path, **kw: Any) -> tuple[list[dict], Echo]:
    import emocaustics.models.embedders as embedders
    import pytest

    mp = pytest.MonkeyPatch()
    mp.setattr(embedders, "make_embedder", lambda spec, **k: LengthEmbedder())
    out.mkdir(parents=True, exist_ok=True)
    llm = Echo()
    try:
        rows = aio.run(asolve_samples(task, samples, Options(method="ask"), llm, out, embedder_spec="length", **kw))
    finally:
        mp.undo()
    return rows, llm


def test_side_texts_reach_the_solver_and_its_counts_reach_stats(tmp_path):
    samples = [Sample("a", ["hi", "there"]), Sample("b", ["x", "longest", "yz"]), Sample("c", ["boom", "ab"])]
    rows, llm = run(Words(), samples, tmp_path)
    assert [r["ok"] for r in rows] == [True, True, False]
    assert rows[2]["step"] == "pick" and rows[2]["reason"] == "a word the solver refuses"
    assert llm.prompts == ["longest", "there"]  # largest sample first (3 words, then 2; c failed before its call)
    preds = [json.loads(x) for x in (tmp_path / "predictions.jsonl").read_text().splitlines()]
    assert {p["id"]: p["prediction"] for p in preds} == {"a": "there", "b": "longest"}
    stats = {s["id"]: s for s in map(json.loads, (tmp_path / "stats.jsonl").read_text().splitlines())}
    assert stats["a"]["picked"] == 1 and stats["a"]["llm_calls"] == 1 and "picked" not in stats["c"]


def test_a_config_builds_on_its_priors_predictions_and_a_missing_one_fails_uncalled(tmp_path):
    prior = tmp_path / "prior"
    Words().store.write_prediction(prior, "a", "A:")
    rows, llm = run(Words(), [Sample("a", ["one"]), Sample("b", ["two"])], tmp_path / "out", prior=prior)
    assert llm.prompts == ["A:one"]  # its `solver_view` hands the prior over in meta["prior"]
    assert rows[1] == {"id": "b", "ok": False, "step": "input", "reason": f"no prediction of b in {prior}",
                       "stats": {}}


class Built:
    """A lazy sample source (a streaming loader): sample i is made when indexed; `live` sees which are still held."""

    def __init__(self, n: int) -> None:
        self.n, self.live, self.peak = n, 0, 0

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> Sample:
        if not 0 <= i < self.n:
            raise IndexError(i)
        import weakref

        s = Sample(f"s{i}", [f"w{i}"] * (1 + i % 7))
        self.live += 1
        weakref.finalize(s, self._dropped)
        return s

    def _dropped(self) -> None:
        self.live -= 1


class Slow(Task):
    """One call per sample after a pause, so that many are in flight; notes how many samples are alive meanwhile."""

    name = "slow-test"
    methods = Methods(solver=("ask",))

    def __init__(self, source: Built) -> None:
        super().__init__()
        self.source = source

    def placement(self, sample: Sample, options: Options) -> Placement:
        return Placement(affinity=sample.id, size=len(sample.input))

    async def solve(self, llm: Any, sample: Sample, options: Options) -> Any:
        import asyncio
        import gc

        await asyncio.sleep(0.001)
        gc.collect()  # only what something still refers to stays in `live`
        self.source.peak = max(self.source.peak, self.source.live)
        return sample.input[0]


def test_a_lazy_source_is_read_as_samples_start_and_not_held_after(tmp_path):
    source = Built(300)
    rows = aio.run(asolve_samples(Slow(source), source, Options(method="ask"), Echo(), tmp_path, concurrency=8))
    assert [r["ok"] for r in rows] == [True] * 300
    preds = {p["id"]: p["prediction"] for p in map(json.loads, (tmp_path / "predictions.jsonl").read_text().splitlines())}
    assert preds == {f"s{i}": f"w{i}" for i in range(300)}
    # at most the 8 in flight, plus the one waiting for a slot and the one being written (not 300)
    assert 8 <= source.peak <= 10, source.peak
