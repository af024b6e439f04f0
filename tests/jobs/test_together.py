"""A job's model configs solved on one plan (jobs/together.py), without Ray or an engine: configs of a model run side
by side through one LLM object (their calls share its batches); a config that builds on another starts when that one
has finished; every config that asks a model is solved here, those of an endpoint billed per call too, and a lone
config is a group of one. The model here stands in for a replica: it answers after a pause and records which
configs' calls were in flight at once."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from emocaustics.core.errors import EndpointDown
from emocaustics.core.task import Loaded, Methods, Options, Sample, ScoreContext, Task
from emocaustics.jobs import together
from emocaustics.jobs.spec import JobSpec
from emocaustics.models.base import ChatRequest, Completion, ModelBase


class Overlap(ModelBase):
    """One LLM object per model (as `make_llm` gives): answers each request after 10 ms, noting the configs in flight."""

    name = "overlap"

    def __init__(self) -> None:
        self.inflight: dict[str, int] = {}
        self.seen_together: set[frozenset[str]] = set()
        self.order: list[str] = []

    async def generate(self, requests: list[ChatRequest]) -> list[Completion]:
        tags = [r.messages[-1]["content"].split(":")[0] for r in requests]
        for t in tags:
            self.inflight[t] = self.inflight.get(t, 0) + 1
        self.seen_together.add(frozenset(k for k, v in self.inflight.items() if v))
        await asyncio.sleep(0.01)
        for t in tags:
            self.inflight[t] -= 1
            self.order.append(t)
        return [Completion(text=r.messages[-1]["content"]) for r in requests]


class Tagged(Task):
    """Each sample asks one call tagged with its config's label; the prediction is the answer."""

    name = "together-test"
    methods = Methods(solver=("ask",))

    def __init__(self, tag: str) -> None:
        super().__init__()
        self.tag = tag

    async def solve(self, llm: Any, sample: Sample, options: Options) -> Any:
        (answer,) = await llm.generate([ChatRequest(messages=({"role": "user", "content": f"{self.tag}:{sample.id}"},))])
        return answer.text


@dataclass
class Config:
    """Stands in for a resolved config (jobs/configs.py): the fields the plan reads."""

    label: str
    model: str
    pred_dir: Path
    task: Tagged = field(init=False)
    options: Options = field(default_factory=lambda: Options(method="ask"))
    llm: Any = None
    prior: Path | None = None
    epochs: int = 1
    batch: bool = False
    limits: Any = None

    def __post_init__(self) -> None:
        self.task = Tagged(self.label)


def _job(**models: str) -> JobSpec:
    return JobSpec.model_validate({"name": "t", "models": {k: {"spec": v} for k, v in models.items()},
                                   "runs": [{"task": "narrative", "options": {"method": "empty"}}]})


def _solve(tmp_path: Path, job: JobSpec, configs: list[Config], priors: dict[str, str],
           monkeypatch, events: list[str] | None = None) -> tuple[dict, dict, list[str]]:
    import emocaustics.models.factory as factory

    llms: dict[str, Overlap] = {}
    # one stand-in per model, by its provider (the plan hands the factory the parsed spec)
    monkeypatch.setattr(factory, "make_llm", lambda spec, **kw: llms.setdefault(spec.kind, Overlap()))
    by_label = {c.label: c for c in configs}
    for c in configs:  # resolved with the job: the parsed model, the folder of the config it builds on
        c.llm = job.models[c.model].parsed()
        c.prior = by_label[priors[c.label]].pred_dir if c.label in priors else None
    events = [] if events is None else events

    class Clock:  # stands in for rundir.WallClock: notes when each config's own solving began and ended
        def __init__(self, label: str) -> None:
            self.label, self.t0 = label, 0.0  # t0: WallClock's start, which the config's prepare moves back
            events.append(f"start {label}")

        def stop(self) -> None:
            events.append(f"stop {self.label}")

    loaded = {c.label: Loaded([Sample(f"s{i}", None) for i in range(6)]) for c in configs}  # one dataset
    solved = together.solve_together(job, configs, loaded, ScoreContext(cache=tmp_path / "cache"), lambda label: None, Clock)
    return solved, llms, events


def test_engine_configs_run_side_by_side_and_a_config_waits_for_the_one_it_builds_on(tmp_path, monkeypatch):
    configs = [Config(x, "m", tmp_path / x) for x in ("a", "b", "c")]
    solved, llms, events = _solve(tmp_path, _job(m="smoke"), configs, {"c": "a"}, monkeypatch)
    assert sorted(solved) == ["a", "b", "c"]
    assert events.index("start c") > events.index("stop a")  # c's clock: its own solving, after a's
    assert sorted(events) == sorted(f"{e} {x}" for e in ("start", "stop") for x in "abc")
    (llm,) = llms.values()  # one LLM object for the model, shared by its configs
    assert frozenset({"a", "b"}) in llm.seen_together  # their calls were in flight at once
    assert llm.order.index("c") > max(i for i, t in enumerate(llm.order) if t == "a")  # c after all of a
    for c in configs:  # every sample has its prediction, in the config's own folder, and in memory the same
        assert c.task.store.read_predictions(c.pred_dir) == {f"s{i}": f"{c.label}:s{i}" for i in range(6)}
        assert solved[c.label].epoch(1)[0] == c.task.store.read_predictions(c.pred_dir)
        assert list(solved[c.label].epoch(1)[1]) == [f"s{i}" for i in range(6)]  # a stats row each


def test_configs_of_an_endpoint_billed_per_call_are_solved_on_the_same_plan(tmp_path, monkeypatch):
    # (they kept their turn in the runner's loop, one after the other, so that a stop came between configs; a typed
    # stop now ends every config's starts at once)
    job = _job(m="smoke", api="openai:gpt-4o-mini")
    configs = [Config("a", "m", tmp_path / "a"), Config("b", "m", tmp_path / "b"),
               Config("x", "api", tmp_path / "x"), Config("y", "m", tmp_path / "y")]
    solved, llms, events = _solve(tmp_path, job, configs, {"y": "x"}, monkeypatch)
    assert sorted(solved) == ["a", "b", "x", "y"] and sorted(llms) == ["openai", "smoke"]
    assert events.index("start y") > events.index("stop x")  # y builds on x: after it
    for c in configs:
        assert c.task.store.read_predictions(c.pred_dir) == {f"s{i}": f"{c.label}:s{i}" for i in range(6)}


def test_a_lone_config_is_a_group_of_one(tmp_path, monkeypatch):
    solved, llms, events = _solve(tmp_path, _job(m="smoke"), [Config("a", "m", tmp_path / "a")], {}, monkeypatch)
    assert list(solved) == ["a"] and list(llms) == ["smoke"] and events == ["start a", "stop a"]
    assert len(Config("a", "m", tmp_path / "a").task.store.read_predictions(tmp_path / "a")) == 6


def test_a_config_that_fails_stops_its_siblings_and_its_error_is_raised(tmp_path, monkeypatch):
    configs = [Config("a", "m", tmp_path / "a"), Config("b", "m", tmp_path / "b")]
    import emocaustics.solve.plan as plan

    async def crash(*a: Any, **k: Any) -> Any:  # an error of the plan itself (not a sample's failure row)
        raise RuntimeError("the pool is gone")

    real = plan.asolve_samples
    monkeypatch.setattr(plan, "asolve_samples", lambda task, *a, **k: crash() if task.tag == "b" else real(task, *a, **k))
    events: list[str] = []
    with pytest.raises(RuntimeError, match="the pool is gone"):
        _solve(tmp_path, _job(m="smoke"), configs, {}, monkeypatch, events)
    # both clocks stopped: the failed config's and its cancelled sibling's (a clock left running outlives the job)
    assert sorted(events) == ["start a", "start b", "stop a", "stop b"], events


class Refused(Tagged):
    """Its model answers the first sample, then refuses with the typed stop (a dead endpoint, as models/breaker.py)."""

    async def solve(self, llm: Any, sample: Sample, options: Options) -> Any:
        if sample.id != "s0":
            raise EndpointDown(f"endpoint down: {self.tag}'s endpoint; stopped calling it")
        return await super().solve(llm, sample, options)


def test_a_typed_stop_starts_no_further_sample_keeps_those_in_flight_and_is_raised_as_itself(tmp_path, monkeypatch):
    # a and b side by side, one sample at a time each; c builds on b. b's model stops at its second sample: a's sample
    # in flight ends and is written, no further sample of a starts, c never starts (it does not wait forever), no
    # sample is written as failed, and the stop comes out as itself
    job = JobSpec.model_validate({"name": "t", "concurrency": 1, "models": {"m": {"spec": "smoke"}},
                                  "runs": [{"task": "narrative", "options": {"method": "empty"}}]})
    configs = [Config(x, "m", tmp_path / x) for x in ("a", "b", "c")]
    configs[1].task = Refused("b")
    events: list[str] = []
    with pytest.raises(EndpointDown, match="b's endpoint"):
        _solve(tmp_path, job, configs, {"c": "b"}, monkeypatch, events)
    a, b = (c.task.store.read_predictions(c.pred_dir) for c in configs[:2])
    assert b == {"s0": "b:s0"}
    assert 1 <= len(a) < 6 and all(v == f"a:{k}" for k, v in a.items()), a  # no Failure rows: simply not done
    assert not configs[2].pred_dir.exists() or not configs[2].task.store.read_predictions(configs[2].pred_dir)
    assert sorted(events) == ["start a", "start b", "stop a", "stop b"], events


@pytest.mark.parametrize("task", ["sextuple", "emotion", "narrative"])
def test_a_row_in_memory_is_what_reading_its_folder_back_gives(task, tmp_path):
    """The job scores the rows the plan hands back (the store's `read_back`): equal to what the store reads back from
    the files it wrote (EmoCaustics parses its reference files; a JSON line gives lists for tuples)."""
    from emocaustics.core.task import Failure, get_task, parse_options

    the_task = get_task(task)
    if task == "emotion":  # chains as the task's own objects
        opts = parse_options(the_task, {"method": "oracle"})
        samples = the_task.data.load(the_task.Dataset.model_validate({}), opts).samples[:2]
        values = the_task.predict("oracle", samples, opts)
    else:
        records = [{"input_sentence": "你好", "holder": "A", "final_model_response": [
            {"target": "t", "aspect": "a", "opinion": "o", "sentiment": "positive", "rationale": "r"}]},
                   {"input_sentence": "b", "holder": "B", "final_model_response": {"target": "x", "opinion": None}}]
        values = {"1": records, "2": {"pair": (1, 2)} if task == "narrative" else []}
    values = {**values, "7": Failure("window", "no answer")}
    kept = {}
    for sid, value in values.items():
        the_task.store.write_prediction(tmp_path, sid, value)  # a Failure: a failure row
        kept[sid] = the_task.store.read_back(sid, value)
    assert kept == the_task.store.read_predictions(tmp_path)
