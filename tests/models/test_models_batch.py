"""Batch mode (`batch=true`, models/batch.py) against the batch API stand-ins (tests/fakes/openai_batch.py,
tests/fakes/anthropic_batch.py: they stand in for OpenAI's Batch API and Anthropic's Message Batches, which cannot be
reached from here). No engine, no Ray.

- a batch run gives the answers a live run gives (OpenAI and Anthropic), each matched to its request although the
  provider's output is in another order; chunks stay within `batch_size`; the answers land in the response cache
  (a rerun sends nothing);
- a kill after the batch was created, then a new LLM object on the same run folder: the pending batch is followed,
  nothing is created twice;
- an expired batch, failed lines: their requests are answered live; what fails live is that request's error;
- `live=True` requests never go into a batch;
- batched tokens are billed at the batch price (per sample: solve/plan.CountingLLM -> prices.sample_cost), and the
  budget reserves at the batch price.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from emocaustics.models.base import ChatRequest, Sampling
from emocaustics.models.factory import make_llm
from emocaustics.models.spec import parse_llm_spec
from fakes.anthropic_batch import FakeAnthropicBatchServer
from fakes.openai_batch import FakeOpenAIBatchServer

SCHEMA = {"type": "object", "properties": {"answer": {"type": "string", "maxLength": 40}}, "required": ["answer"]}
FAST = "batch=true&batch_poll=0.02&batch_quiet=0.05"
# the kill tests need every request in the one batch: under CI load they came more than 0.05 s apart
ONE_BATCH = "batch=true&batch_poll=0.02&batch_quiet=0.5"


def _llm(spec: str, **kw: Any) -> Any:  # a spec string here, parsed as a job's edge parses it
    return make_llm(parse_llm_spec(spec), **kw)


def _requests(n: int, tag: str = "q") -> list[ChatRequest]:
    return [ChatRequest(messages=({"role": "system", "content": "answer in JSON"},
                                  {"role": "user", "content": f"{tag}{i:03d} which cause came first?"}),
                        schema=SCHEMA if i % 3 else None, sampling=Sampling(max_tokens=64)) for i in range(n)]


def _run(llm: Any, requests: list[ChatRequest]) -> list[Any]:
    async def go() -> list[Any]:
        try:
            # as a run asks: many samples in flight, one request each
            return [c for part in await asyncio.gather(*(llm.generate([r]) for r in requests)) for c in part]
        finally:
            await llm.aclose()

    return asyncio.run(go())


def _same(a: list[Any], b: list[Any]) -> None:
    assert [(c.text, c.parsed, c.error) for c in a] == [(c.text, c.parsed, c.error) for c in b]


@pytest.fixture(autouse=True)
def _keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-not-a-key")


def test_openai_batch_answers_as_live_in_chunks_from_shuffled_output(tmp_path: Path) -> None:
    reqs = _requests(7)
    with FakeOpenAIBatchServer(seed=2) as server:
        spec = f"openai:fake-chat@{server.base_url}?json_mode=schema"
        live = _run(_llm(spec, cache_dir=tmp_path / "live"), reqs)
        assert server.chat_calls == 7 and server.creates == 0
        batched = _run(_llm(f"{spec}&{FAST}&batch_size=3", cache_dir=tmp_path / "run"), reqs)
        _same(batched, live)
        assert all(c.batched and c.ok for c in batched)
        assert server.chat_calls == 7  # nothing more was asked live
        assert server.creates == 3 and server.uploads == 3  # 7 requests in chunks of at most 3
        sizes = sorted(len([x for x in b.lines]) for b in server.batches.values())
        assert sizes == [1, 3, 3]
        # the output files really are in another order than their input
        outs = [b.final["output_file_id"] for b in server.batches.values() if len(b.lines) == 3]
        for b, fid in zip([b for b in server.batches.values() if len(b.lines) == 3], outs):
            out_ids = [json.loads(x)["custom_id"] for x in server.files[fid].splitlines()]
            assert out_ids != [x["custom_id"] for x in b.lines] and sorted(out_ids) == sorted(x["custom_id"]
                                                                                              for x in b.lines)
        # the batch ids are in the run folder, each finished
        rows = [json.loads(x) for x in (tmp_path / "run" / "batches.jsonl").read_text().splitlines()]
        assert sorted(r["event"] for r in rows) == ["finished"] * 3 + ["submitted"] * 3
        # a rerun on the same folder: every answer from the response cache, nothing sent
        again = _run(_llm(f"{spec}&{FAST}&batch_size=3", cache_dir=tmp_path / "run"), reqs)
        _same(again, live)
        assert all(c.cached for c in again)
        assert server.creates == 3 and server.chat_calls == 7


def test_anthropic_batch_answers_as_live(tmp_path: Path) -> None:
    reqs = _requests(6)
    with FakeAnthropicBatchServer(seed=1) as server:
        spec = f"anthropic:claude-fake@{server.base_url}?json_mode=schema"
        live = _run(_llm(spec, cache_dir=tmp_path / "live"), reqs)
        assert server.live_calls == 6
        batched = _run(_llm(f"{spec}&{FAST}", cache_dir=tmp_path / "run"), reqs)
        _same(batched, live)
        assert all(c.batched and c.ok for c in batched)
        assert [c.prompt_tokens for c in batched] == [c.prompt_tokens for c in live]
        assert server.live_calls == 6 and server.creates == 1 and server.result_reads == 1
        # the schema went with each request (output_config), as it goes live
        assert all("output_config" in r["params"] for r, q in zip(server.requests, reqs) if q.schema)
        assert any(c.parsed == {"answer": "e which cause came first?"[-16:]} for c in batched)


def test_kill_during_batch_resumes_it_and_creates_nothing_twice(tmp_path: Path) -> None:
    reqs = _requests(5)
    with FakeOpenAIBatchServer(process_seconds=0.6) as server:
        spec = f"openai:fake-chat@{server.base_url}?json_mode=schema&{ONE_BATCH}"

        async def killed() -> None:
            llm = _llm(spec, cache_dir=tmp_path)
            task = asyncio.ensure_future(asyncio.gather(*(llm.generate([r]) for r in reqs)))
            while server.creates == 0 or not (tmp_path / "batches.jsonl").exists():
                await asyncio.sleep(0.01)
            task.cancel()  # the job is killed while the batch runs at the provider
            with pytest.raises(asyncio.CancelledError):
                await task
            await llm.aclose()

        asyncio.run(killed())
        assert server.creates == 1 and server.chat_calls == 0
        llm = _llm(spec, cache_dir=tmp_path)  # a new process's LLM on the same run folder
        resumed = _run(llm, reqs)
        assert server.creates == 1 and server.uploads == 1  # the pending batch was followed, not sent again
        assert server.chat_calls == 0
        assert all(c.batched and c.ok for c in resumed)
        assert resumed[1].parsed == {"answer": "q001 which cause came first?"[:40]}
        assert asyncio.run(llm.llm.stats())["batches_resumed"] == 1
        live = _run(_llm(f"openai:fake-chat@{server.base_url}?json_mode=schema"), reqs)
        _same(resumed, live)


def test_resumed_batch_answers_requests_nobody_asks_again_into_the_cache(tmp_path: Path) -> None:
    reqs = _requests(4)
    with FakeAnthropicBatchServer(process_seconds=0.4) as server:
        spec = f"anthropic:claude-fake@{server.base_url}?json_mode=schema&{ONE_BATCH}"

        async def killed() -> None:
            llm = _llm(spec, cache_dir=tmp_path)
            task = asyncio.ensure_future(asyncio.gather(*(llm.generate([r]) for r in reqs)))
            while not (tmp_path / "batches.jsonl").exists():
                await asyncio.sleep(0.01)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            await llm.aclose()

        asyncio.run(killed())
        # the rerun asks for one of the four only; the batch's other answers still land in the cache
        first = _run(_llm(spec, cache_dir=tmp_path), reqs[:1])
        assert first[0].batched and server.creates == 1
        rest = _run(_llm(spec, cache_dir=tmp_path), reqs[1:])
        assert all(c.cached for c in rest) and server.creates == 1 and server.live_calls == 0


def test_expired_batch_and_failed_lines_are_finished_live(tmp_path: Path) -> None:
    reqs = _requests(6)
    with FakeOpenAIBatchServer(expire_after=3, fail_markers=("q001",)) as server:
        spec = f"openai:fake-chat@{server.base_url}?json_mode=schema"
        out = _run(_llm(f"{spec}&{FAST}", cache_dir=tmp_path), reqs)
        batch = next(iter(server.batches.values()))
        assert batch.final["status"] == "expired"
        # 3 processed (one of them failed), 3 expired: 4 asked live
        assert server.chat_calls == 4
        assert [c.batched for c in out] == [True, False, True, False, False, False]
        _same(out, _run(_llm(spec), reqs))


def test_anthropic_errored_and_expired_results_are_finished_live(tmp_path: Path) -> None:
    reqs = _requests(5)
    with FakeAnthropicBatchServer(expire_after=4, fail_markers=("q002",)) as server:
        spec = f"anthropic:claude-fake@{server.base_url}?json_mode=schema"
        out = _run(_llm(f"{spec}&{FAST}", cache_dir=tmp_path), reqs)
        assert server.live_calls == 2  # q002 errored, q004 expired
        assert [c.batched for c in out] == [True, True, False, True, False]
        _same(out, _run(_llm(spec), reqs))


def test_a_request_that_fails_live_too_is_reported_with_its_error(tmp_path: Path) -> None:
    from fakes.openai_chat import Faults

    reqs = _requests(2)
    with FakeOpenAIBatchServer(Faults(rate_500=1.0, retry_after_ms=1), fail_markers=("q000",)) as server:
        spec = f"openai:fake-chat@{server.base_url}?json_mode=schema&max_retries=0&{FAST}"
        out = _run(_llm(spec, cache_dir=tmp_path), reqs)
        assert out[0].error and out[0].error.startswith("HTTP 500") and not out[0].batched
        assert out[1].ok and out[1].batched


def test_live_requests_stay_live(tmp_path: Path) -> None:
    reqs = [ChatRequest(messages=r.messages, schema=r.schema, sampling=r.sampling, live=i < 2)
            for i, r in enumerate(_requests(4))]
    with FakeOpenAIBatchServer() as server:
        out = _run(_llm(f"openai:fake-chat@{server.base_url}?json_mode=schema&{FAST}", cache_dir=tmp_path), reqs)
        assert [c.batched for c in out] == [False, False, True, True]
        assert server.chat_calls == 2 and len(server.lines) == 2


def test_batched_tokens_are_billed_at_the_batch_price(tmp_path: Path) -> None:
    from emocaustics.models.prices import Price, sample_cost
    from emocaustics.solve.plan import CountingLLM

    price = Price(input=2.0, output=8.0)  # batch: half
    reqs = _requests(3)
    with FakeOpenAIBatchServer() as server:
        spec = f"openai:fake-chat@{server.base_url}?json_mode=schema"

        def stats(spec_: str, folder: str) -> dict[str, int]:
            counted = CountingLLM(_llm(spec_, cache_dir=tmp_path / folder))
            _run(counted, reqs)
            return counted.counts

        live, batched = stats(spec, "live"), stats(f"{spec}&{FAST}", "batch")
    assert live["prompt_tokens"] == batched["prompt_tokens"] > 0
    assert batched["batch_calls"] == 3 and batched["batch_prompt_tokens"] == batched["prompt_tokens"]
    assert "batch_calls" not in live
    live_usd, batch_usd = sample_cost(price, live), sample_cost(price, batched)
    assert live_usd == pytest.approx(price.cost(live["prompt_tokens"], live["generated_tokens"]))
    assert batch_usd == pytest.approx(live_usd / 2)


def test_budget_reserves_at_the_batch_price(tmp_path: Path) -> None:
    from emocaustics.core.errors import BudgetReached
    from emocaustics.models import budget
    from emocaustics.models.prices import Price

    reqs = _requests(4)
    with FakeOpenAIBatchServer() as server:
        spec = f"openai:fake-chat@{server.base_url}?json_mode=schema&{FAST}"
        name = f"openai:fake-chat@{server.base_url}"
        price = Price(input=1000.0, output=1000.0)
        one = price.cost(budget.reserve_tokens(reqs[0]), 64, batch=True)
        # room for three requests' worst case at the batch price (two at the live price)
        ledger = budget.activate(3.5 * one, {name: price})
        llm = _llm(spec, cache_dir=tmp_path)

        async def go() -> list[Any]:  # as `_run`, with each request's typed stop kept beside the answers
            try:
                return [r if isinstance(r, BaseException) else r[0] for r in
                        await asyncio.gather(*(llm.generate([r]) for r in reqs), return_exceptions=True)]
            finally:
                await llm.aclose()

        try:
            out = asyncio.run(go())
        finally:
            budget._active = None
    stopped = [c for c in out if isinstance(c, BudgetReached)]  # the typed stop, not a failed answer
    assert len(stopped) == 1 and str(stopped[0]).startswith(budget.BUDGET_REACHED), out
    out = [c for c in out if c not in stopped]
    assert sum(c.ok for c in out) == 3 and len(out) == 3
    assert ledger.reserved == pytest.approx(0.0)
    assert ledger.spent == pytest.approx(sum(price.cost(c.prompt_tokens, c.generated_tokens, batch=True)
                                             for c in out if c.ok))


def test_job_model_entry_batch_wires_the_parsed_spec() -> None:
    from emocaustics.core.errors import UsageError
    from emocaustics.jobs.spec import ModelSpec

    spec = ModelSpec(spec="openai:gpt-4o-mini@http://127.0.0.1:1/v1", batch=True).parsed()
    assert spec.batch.on is True and "batch=true" in spec.canonical()
    plain = ModelSpec(spec="openai:gpt-4o-mini@http://127.0.0.1:1/v1").parsed()
    assert plain.batch.on is False and "batch" not in plain.canonical()
    with pytest.raises(UsageError, match="batch needs an openai: or anthropic: model"):
        ModelSpec(spec="smoke", batch=True).parsed()


def test_asker_counts_batched_answers_for_their_price() -> None:
    """EmoCaustics / ECPE / narrative steps ask through `Asker`; the sample's one counting layer (`CountingLLM`)
    records batched answers for the batch price."""
    from pydantic import BaseModel

    from emocaustics.models.base import Completion
    from emocaustics.models.prices import Price, sample_cost
    from emocaustics.solve.ask import Ask, Asker
    from emocaustics.solve.item import CountingLLM

    class Answer(BaseModel):
        answer: str

    class Stub:
        name = "stub"

        async def generate(self, requests: list[ChatRequest]) -> list[Completion]:
            assert [r.live for r in requests] == [False, True]  # a chain's step stays live
            return [Completion(text='{"answer": "x"}', parsed={"answer": "x"}, prompt_tokens=100,
                               generated_tokens=10, batched=not r.live) for r in requests]

    counted = CountingLLM(Stub())
    asker = Asker(counted)
    asyncio.run(asker.ask_many([Ask("one", "u1", Answer, SCHEMA), Ask("two", "u2", Answer, SCHEMA, live=True)]))
    stats = counted.counts
    assert (stats["llm_calls"], stats["batch_calls"], stats["batch_prompt_tokens"]) == (2, 1, 100)
    price = Price(input=1.0, output=1.0)
    assert sample_cost(price, stats) == pytest.approx(price.cost(100, 10) + price.cost(100, 10) / 2)


def test_closing_a_cached_llm_commits_its_answers_for_the_next_one_on_the_same_folder(tmp_path: Path) -> None:
    """What a closed LLM answered is on disk: the next LLM made on the run folder opens its own cache object and reads
    the file (under CI load the writer thread had not committed a finished batch's answers yet, and a resumed run
    missed them)."""
    import threading

    from emocaustics.models.base import Completion
    from emocaustics.models.cache import CachedLLM, ResponseCache, request_key

    class Answers:
        name = "fake"

        async def generate(self, requests: list[ChatRequest]) -> list[Completion]:
            return [Completion(text="yes") for _ in requests]

    first = ResponseCache(tmp_path / "responses.sqlite")
    idle = threading.Thread(target=lambda: None)
    idle.start()
    idle.join()
    first._writer = idle  # a writer thread that has not got round to committing yet
    llm = CachedLLM(Answers(), first)
    keys = [request_key("fake", r) for r in _requests(3)]
    first.put_many("fake", [(k, Completion(text="yes")) for k in keys])
    second = ResponseCache(tmp_path / "responses.sqlite")
    assert second.get_many(keys) == {}  # not committed: another cache object cannot see them
    asyncio.run(llm.aclose())
    assert sorted(second.get_many(keys)) == sorted(keys)
    first.close()
    second.close()
