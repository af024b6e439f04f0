"""The cost area's decisions (issue 44, `make mutation AREA=cost`): what is counted per call, what a config costs,
and when the budget stops a run; each test pins a decision a mutant of jobs/cost.py or models/{budget,prices,usage}.py
changed without any other test failing."""

from __future__ import annotations

from emocaustics.models.base import Completion
from emocaustics.models.usage import Usage


def test_usage_counts_calls_errors_and_tokens_of_each_completion():
    u = Usage()
    u.count([Completion("a", prompt_tokens=3, generated_tokens=5), Completion("", error="boom", prompt_tokens=2)])
    assert u.as_dict() == {"calls": 2, "errors": 1, "prompt_tokens": 5, "generated_tokens": 5,
                           "cached_prompt_tokens": 0, "cache_hits": 0, "cache_misses": 0}


def test_usage_adds_another_usage_or_a_dict_and_ignores_unknown_keys():
    u = Usage(calls=1, cache_hits=2)
    u.add(Usage(calls=2, cache_misses=4, cached_prompt_tokens=7))
    u.add({"errors": "3", "nonsense": 9})
    assert u.as_dict() == {"calls": 3, "errors": 3, "prompt_tokens": 0, "generated_tokens": 0,
                           "cached_prompt_tokens": 7, "cache_hits": 2, "cache_misses": 4}


# ---- prices: what a call costs


import asyncio  # noqa: E402

import pytest  # noqa: E402

from emocaustics.core.errors import BudgetReached  # noqa: E402
from emocaustics.models import budget  # noqa: E402
from emocaustics.models.base import ChatRequest, Sampling  # noqa: E402
from emocaustics.models.prices import (Price, PriceOverride, listed, price_for, sample_cost, table)  # noqa: E402
from emocaustics.models.spec import expand_shorthand, parse_llm_spec  # noqa: E402


def _spec(text):
    """A spec as a job's resolution hands it on: parsed, its provider's facts with it."""
    return parse_llm_spec(expand_shorthand(text))

P = Price(input=2.0, output=10.0, cached_input=0.5, batch_input=1.5, batch_output=4.0)


def test_a_call_costs_fresh_cached_and_generated_tokens_at_their_prices_per_million():
    assert P.cost(1000, 100) == pytest.approx((1000 * 2.0 + 100 * 10.0) / 1e6)
    assert P.cost(1000, 100, 400) == pytest.approx((600 * 2.0 + 400 * 0.5 + 100 * 10.0) / 1e6)
    assert P.cost(100, 0, 400) == pytest.approx(400 * 0.5 / 1e6)  # more cached than prompt: no negative fresh part
    assert P.cost(1000, 100, batch=True) == pytest.approx((1000 * 1.5 + 100 * 4.0) / 1e6)


def test_missing_prices_default_to_input_for_cached_and_half_for_batch():
    p = Price(input=2.0, output=10.0)
    assert p.cost(1000, 0, 400) == pytest.approx(1000 * 2.0 / 1e6)
    assert p.cost(1000, 100, batch=True) == pytest.approx((1000 * 1.0 + 100 * 5.0) / 1e6)
    assert p.cost(1000, 100, 1000, batch=True) == pytest.approx((1000 * 2.0 + 100 * 5.0) / 1e6)


def test_a_spec_is_priced_by_its_model_name_where_its_provider_bills_per_call():
    assert price_for(_spec("openai:gpt-4o@http://x/v1?timeout=3")) == listed("gpt-4o") is not None
    assert price_for(_spec("openai:gpt-4o?timeout=3")) == listed("gpt-4o")
    assert price_for(_spec("anthropic:claude-3-5-haiku-latest")) == listed("claude-3-5-haiku-latest") is not None
    assert price_for(parse_llm_spec("ollama:gpt-4o")) is None  # the same name, on a server that bills nothing
    assert price_for(_spec("smoke")) is None and price_for(_spec("vllm:gpt-4o")) is None


def test_listed_prices_exact_dated_and_latest_names():
    models = table()["models"]
    assert listed("gpt-4o") == Price(**models["gpt-4o"])
    assert listed("gpt-4o-2024-08-06") == Price(**models["gpt-4o"])
    assert listed("gpt-4o-20240806") == Price(**models["gpt-4o"])
    assert listed("gpt-4o-latest") == Price(**models["gpt-4o"])
    assert listed("gpt-4o-2024-08") is None
    assert listed("") is None and listed(None) is None


def test_an_override_fills_from_the_table_and_without_input_and_output_is_unknown():
    base = listed("gpt-4o")
    assert price_for(_spec("openai:gpt-4o@http://x"), PriceOverride(output=1.0)) == base.model_copy(
        update={"output": 1.0})
    assert price_for(_spec("openai:mine@http://x"), PriceOverride(input=1.0)) is None
    assert price_for(_spec("openai:mine@http://x"), PriceOverride(output=1.0)) is None
    assert price_for(_spec("openai:mine@http://x"), PriceOverride(input=1.0, output=3.0, batch_output=0.5)) == Price(
        input=1.0, output=3.0, batch_output=0.5)
    assert price_for(_spec("openai:mine@http://x")) is None


def test_a_sample_costs_its_live_and_batch_tokens():
    assert sample_cost(None, {}) == 0.0
    assert sample_cost(None, {"prompt_tokens": 0, "generated_tokens": 0}) == 0.0
    assert sample_cost(None, {"prompt_tokens": 1}) is None
    assert sample_cost(None, {"generated_tokens": 1}) is None
    assert sample_cost(P, {"prompt_tokens": None}) == 0.0
    stats = {"prompt_tokens": 1000, "generated_tokens": 100, "cached_prompt_tokens": 900,
             "batch_prompt_tokens": 400, "batch_generated_tokens": 30}
    live = P.cost(600, 70, 600)  # the cached tokens are capped at the live prompt tokens
    assert sample_cost(P, stats) == pytest.approx(live + P.cost(400, 30, batch=True))
    assert sample_cost(P, {"prompt_tokens": 1000, "generated_tokens": 100, "cached_prompt_tokens": 200}) == \
        pytest.approx(P.cost(1000, 100, 200))


# ---- the budget: when a run stops


def _request(text: str, max_tokens: int = 50) -> ChatRequest:
    return ChatRequest(messages=({"role": "user", "content": text},), sampling=Sampling(max_tokens=max_tokens))


def test_a_reservation_counts_utf8_bytes_halved_plus_overhead_per_message():
    r = ChatRequest(messages=({"role": "system", "content": "ab" * 5}, {"role": "user", "content": "é" * 3},
                              {"role": "user"}))
    assert budget.reserve_tokens(r) == (10 // 2 + 8) + (6 // 2 + 8) + (0 + 8)
    assert budget.reserve_tokens(ChatRequest(messages=({"role": "user", "content": "abc"},))) == 1 + 8


def test_the_ledger_refuses_past_the_limit_and_then_everything():
    led = budget.Ledger(1.0)
    assert led.prices == {} and led.spent == 0.0 and led.reserved == 0.0 and led.stopped is False
    assert led.reserve(0.6)
    assert led.reserve(0.4)  # exactly at the limit is allowed
    assert led.reserved == pytest.approx(1.0)
    assert not led.reserve(0.01) and led.stopped
    led.settle(1.0, 0.2)
    assert led.reserved == 0.0 and led.spent == pytest.approx(0.2)
    assert not led.reserve(0.01)  # stopped stays stopped
    assert budget.Ledger(None).reserve(1e9)
    open_ = budget.Ledger(None)
    open_.stopped = True
    assert open_.reserve(1.0)  # no limit: never stops


def test_settling_never_leaves_a_negative_reservation_and_adds_what_was_spent():
    led = budget.Ledger(10.0)
    led.reserve(1.0)
    led.settle(3.0, 0.5)
    led.settle(0.0, 0.25)
    assert led.reserved == 0.0 and led.spent == pytest.approx(0.75)
    led.reserve(2.0)
    led.settle(0.5, 0.0)
    assert led.reserved == pytest.approx(1.5)


def test_the_stop_names_the_limit_and_what_was_spent():
    led = budget.Ledger(2.5)
    led.reserve(1.0)
    led.settle(0.0, 0.123456)
    stop = led.stop()
    assert isinstance(stop, BudgetReached)
    assert str(stop) == ("cost budget reached: max_cost_usd 2.5 (spent 0.1235 USD in this run, 1.0000 USD in flight); "
                         "the next call could cross it")


def test_activate_and_guard():
    try:
        price = Price(input=1.0, output=1.0)
        led = budget.activate(1.0, {"openai:a@x": price})
        assert budget.active() is led and led.limit_usd == 1.0 and led.prices == {"openai:a@x": price}
        inner = object()
        guarded = budget.guard(inner, "openai:a@x")
        assert isinstance(guarded, budget.BudgetLLM) and guarded.ledger is led and guarded.price is price
        assert budget.guard(inner, "openai:b@x") is inner
        budget.activate(None, {"openai:a@x": price})
        assert budget.guard(inner, "openai:a@x") is inner
        budget._active = None
        assert budget.active() is None and budget.guard(inner, "openai:a@x") is inner
    finally:
        budget._active = None


class _Answers:
    def __init__(self, prompt: int, generated: int, fail: bool = False):
        self.prompt, self.generated, self.fail, self.seen = prompt, generated, fail, []

    async def generate(self, requests):
        self.seen += requests
        if self.fail:
            raise RuntimeError("down")
        return [Completion("ok", prompt_tokens=self.prompt, generated_tokens=self.generated) for _ in requests]


def test_budget_llm_reserves_the_worst_case_and_settles_what_was_used():
    price = Price(input=1e6, output=1e6)  # a dollar a token
    led = budget.Ledger(100.0)
    inner = _Answers(prompt=3, generated=4)
    llm = budget.BudgetLLM(inner, led, price)
    out = asyncio.run(llm.generate([_request("abcd", max_tokens=20)]))
    assert [c.text for c in out] == ["ok"]
    assert led.spent == pytest.approx(7.0) and led.reserved == 0.0
    # reservation: (4 // 2 + 8) prompt + 20 answer tokens = 30 dollars; 71 left after 2 such: the third is refused
    led2 = budget.Ledger(30.0)
    assert asyncio.run(budget.BudgetLLM(_Answers(1, 1), led2, price).generate([_request("abcd", max_tokens=20)]))
    led3 = budget.Ledger(29.99)
    inner3 = _Answers(1, 1)
    with pytest.raises(BudgetReached):
        asyncio.run(budget.BudgetLLM(inner3, led3, price).generate([_request("abcd", max_tokens=20)]))
    assert inner3.seen == [] and led3.stopped


def test_budget_llm_releases_the_reservation_of_a_failed_call_at_no_cost():
    led = budget.Ledger(100.0)
    with pytest.raises(RuntimeError):
        asyncio.run(budget.BudgetLLM(_Answers(1, 1, fail=True), led, Price(input=1e6, output=1e6)).generate(
            [_request("abcd")]))
    assert led.reserved == 0.0 and led.spent == 0.0


# ---- jobs/cost.py: which endpoints a job pays for, and the pre-flight check of max_cost_usd


JOB = """
name: c
dataset:
  aer: {{split: sample}}
models:
  remote: {{spec: "openai:mine@http://x/v1", price: {{input: 1.0, output: 2.0}}}}
  listed: {{spec: "openai:gpt-4o-mini@http://x/v1"}}
  bare: {{spec: "openai:nope@http://x/v1?timeout=5"}}
  smoke: {{spec: smoke}}
  judgey: {{spec: "openai:gpt-4o@http://j/v1", price: {{input: 7.0, output: 9.0}}}}
runs:
{runs}
scoring: {{embedder: minilm, judge: {judge}}}
{budget}
"""
RUN = "  - {{task: aer, options: {{method: llm, prompt: zero-shot, context: none}}, model: {}}}"


def _job(tmp_path, models: list[str], *, budget_usd: float | None = 3, judge: str = "none"):
    from emocaustics.jobs.configs import resolve
    from emocaustics.jobs.spec import load_job

    path = tmp_path / "job.yaml"
    path.write_text(JOB.format(runs="\n".join(RUN.format(m) for m in models), judge=judge,
                               budget="" if budget_usd is None else f"max_cost_usd: {budget_usd}"), encoding="utf-8")
    job = load_job(path)
    return job, resolve(job, tmp_path / "run")  # the job, and the job resolved


def _start_ledger(job, resolved):
    """The run's ledger as the phases make it: the pre-flight's prices (`cost.check_budget`), then the start's."""
    from emocaustics.jobs import preflight as cost

    budget.activate(job.max_cost_usd, cost.check_budget(resolved))


def test_the_ledger_prices_each_remote_endpoint_by_its_endpoint_name(tmp_path):
    job, resolved = _job(tmp_path, ["remote", "listed", "smoke"])
    try:
        _start_ledger(job, resolved)
        led = budget.active()
        assert led.limit_usd == 3.0
        assert led.prices == {"openai:gpt-4o-mini@http://x/v1": listed("gpt-4o-mini"),
                              "openai:mine@http://x/v1": Price(input=1.0, output=2.0)}
    finally:
        budget._active = None


def test_a_limit_with_an_unpriced_endpoint_is_a_usage_error_naming_it(tmp_path):
    from emocaustics.core.errors import UsageError
    from emocaustics.jobs import preflight as cost

    budget._active = None  # no ledger: an earlier test's run may have left its ledger active
    job, resolved = _job(tmp_path, ["remote", "bare"])
    with pytest.raises(UsageError) as err:
        cost.check_budget(resolved)
    assert str(err.value) == (  # once printed `output: USD}}` (a doubled brace outside the f-string)
        f"models.bare: max_cost_usd is set but openai:nope@http://x/v1 has no known price (the shipped table of "
        f"{table()['as_of']} does not list it): give its `price: {{input: USD, output: USD}}` per 1M tokens")
    try:
        with pytest.raises(UsageError):
            _start_ledger(job, resolved)
        assert budget.active() is None
    finally:
        budget._active = None


def test_no_limit_needs_no_price_and_the_ledger_then_has_no_limit(tmp_path):
    from emocaustics.jobs import preflight as cost

    job, resolved = _job(tmp_path, ["remote", "bare"], budget_usd=None)
    cost.check_budget(resolved)
    try:
        _start_ledger(job, resolved)
        assert budget.active().limit_usd is None
        assert budget.active().prices == {"openai:mine@http://x/v1": Price(input=1.0, output=2.0)}
    finally:
        budget._active = None


def test_a_row_without_cached_tokens_or_with_zero_has_none_cached():
    assert sample_cost(P, {"prompt_tokens": 1000, "generated_tokens": 100}) == pytest.approx(P.cost(1000, 100))
    assert sample_cost(P, {"prompt_tokens": 1000, "generated_tokens": 100, "cached_prompt_tokens": 0}) == \
        pytest.approx(P.cost(1000, 100))


def test_a_request_with_max_tokens_0_reserves_its_prompt_only():
    price = Price(input=1e6, output=1e6)  # a dollar a token; "abcd" reserves 4 // 2 + 8 = 10 prompt tokens
    led = budget.Ledger(10.0)
    out = asyncio.run(budget.BudgetLLM(_Answers(1, 0), led, price).generate([_request("abcd", max_tokens=0)]))
    assert [c.text for c in out] == ["ok"] and led.spent == pytest.approx(1.0)


def test_the_judge_is_priced_by_its_model_entry_or_by_its_spec(tmp_path):
    gpt4o, mini = listed("gpt-4o"), listed("gpt-4o-mini")
    try:
        job, resolved = _job(tmp_path, ["listed"], judge="judgey")  # a job model no run uses: its price override
        _start_ledger(job, resolved)
        assert budget.active().prices == {"openai:gpt-4o@http://j/v1": gpt4o.model_copy(update={"input": 7.0,
                                                                                              "output": 9.0}),
                                          "openai:gpt-4o-mini@http://x/v1": mini}
        job, resolved = _job(tmp_path, ["listed"], judge='"openai:gpt-4o@http://j/v1"')  # a spec: the table's price
        _start_ledger(job, resolved)
        assert budget.active().prices == {"openai:gpt-4o@http://j/v1": gpt4o, "openai:gpt-4o-mini@http://x/v1": mini}
    finally:
        budget._active = None


def test_usage_adds_up_errors_over_the_completions():
    u = Usage()
    u.count([Completion("a"), Completion("", error="x"), Completion("", error="y")])
    assert u.errors == 2 and u.calls == 3


def test_a_spec_is_priced_by_its_model_name_without_its_url_or_options():
    assert price_for(_spec("openai:gpt-4o@http://user@host/v1?timeout=3")) == listed("gpt-4o")
