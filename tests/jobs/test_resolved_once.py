"""The job resolved once (issue 54 item 3): every model the job calls, the judge too, is parsed and priced where the
job is resolved, and the pre-flight, the cost check and the start phase read that one parse and price. Fast: no Ray, no engine, no
network."""

from __future__ import annotations

from collections import Counter

import pytest

from emocaustics.core.errors import UsageError
from emocaustics.jobs.spec import JobSpec
from emocaustics.models import budget, prices as price_table
from emocaustics.models import spec as model_spec

ENDPOINT = "openai:gpt-4o@http://127.0.0.1:9/v1"
JUDGE = "openai:gpt-4o-mini@http://127.0.0.1:9/v1"


def _job(judge: str = JUDGE) -> JobSpec:
    return JobSpec.model_validate({
        "name": "once", "models": {"api": {"spec": ENDPOINT}}, "max_cost_usd": 1.0, "scoring": {"judge": judge},
        "grid": {"task": ["emotion"], "model": ["api"], "method": ["direct", "window"]}})


@pytest.fixture
def parses(monkeypatch) -> Counter:
    """Each parse of a spec string, counted by the spec: a job model's entry (`ModelSpec.parsed` parses its spec) or the
    judge's spec string."""
    seen: Counter = Counter()
    text = model_spec.parse_llm_spec

    def parse_llm_spec(spec, *args, **kwargs):
        seen[spec] += 1
        return text(spec, *args, **kwargs)

    monkeypatch.setattr(model_spec, "parse_llm_spec", parse_llm_spec)
    return seen


def test_each_model_and_the_judge_are_parsed_and_priced_once_for_pre_flight_cost_and_start(tmp_path, monkeypatch,
                                                                                              parses):
    from emocaustics.jobs import rundir, startup
    from emocaustics.jobs.configs import resolve
    from emocaustics.jobs.preflight import checked
    from emocaustics.models import embedders

    priced: Counter = Counter()
    price_for = price_table.price_for
    monkeypatch.setattr(price_table, "price_for", lambda spec, *a: priced.update([spec.identity]) or price_for(spec, *a))
    job, run_dir = _job(), tmp_path / "run"
    resolved = resolve(job, run_dir)
    assert [c.llm for c in resolved.configs] == [resolved.called[0].llm] * 2  # two configs, one parse of their model
    assert [(m.where, m.name) for m in resolved.called] == [("models.api", "api"),
                                                                     ("scoring.judge", JUDGE)]
    loaded, prices, _ = checks = checked(resolved, network=False)  # the pre-flight: the samples, and each endpoint's price
    assert sorted(prices) == [JUDGE, ENDPOINT]
    monkeypatch.setattr(embedders, "make_embedder", lambda spec: None)  # no embedder loaded here
    claimed = rundir.claim(run_dir, resolved, resume=False, force=False)
    try:
        started = startup.start_job(resolved, checks, claimed, None, False)
    finally:
        budget._active = None
        rundir._let_go(claimed)
    assert started.ctx.judge is resolved.judge and started.ctx.judge.identity == JUDGE
    assert parses == {ENDPOINT: 1, JUDGE: 1} and priced == {ENDPOINT: 1, JUDGE: 1}
    assert [m.price for m in resolved.called] == [c.price for c in resolved.configs[:1]] + [prices[JUDGE]]


def test_a_judge_that_does_not_parse_stops_the_pre_flight_naming_it(tmp_path, parses):
    from emocaustics.jobs.configs import resolve
    from emocaustics.jobs.preflight import checked

    resolved = resolve(_job("openai:m@http://127.0.0.1:9/v1?replicas=2"), tmp_path / "run")
    with pytest.raises(UsageError, match="unknown option 'replicas'"):
        checked(resolved, network=False)  # before the run folder is written, not at the start phase
    assert isinstance(resolved.judge, UsageError)
