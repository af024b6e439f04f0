"""Spec strings, the smoke model builder and the response cache: no engine needed."""

from __future__ import annotations

import asyncio
import json
import multiprocessing
from pathlib import Path

import pytest

from emocaustics.core.errors import UsageError
from emocaustics.models.base import ChatRequest, Completion, Sampling
from emocaustics.models.cache import CachedLLM, ResponseCache, request_key
from emocaustics.models.jsonout import parse_answer
from emocaustics.models.smoke import build_smoke_model, model_hash, training_text
from emocaustics.models.spec import parse_llm_spec


def test_parse_specs() -> None:
    s = parse_llm_spec("vllm:Qwen/Qwen2.5-7B-Instruct?replicas=2&tp=2&max_model_len=4096&dtype=bfloat16")
    assert (s.kind, s.model, s.replicas, s.tp) == ("vllm", "Qwen/Qwen2.5-7B-Instruct", 2, 2)
    assert s.engine == {"max_model_len": 4096, "dtype": "bfloat16"}
    assert parse_llm_spec(s.canonical()) == s
    o = parse_llm_spec("openai:deepseek-chat@https://api.deepseek.com/v1?concurrency=8")
    assert (o.kind, o.model, o.base_url, o.client) == ("openai", "deepseek-chat", "https://api.deepseek.com/v1", {})
    assert o.limits.concurrency == 8 and o.endpoint_options() == {"concurrency": 8}  # typed: the breaker's limits
    assert parse_llm_spec("smoke").canonical() == "smoke"
    assert parse_llm_spec("smoke").with_options(replicas=2).replicas == 2
    # Option order does not change identity (it is the registry key).
    assert parse_llm_spec("vllm:m?a=1&b=2").canonical() == parse_llm_spec("vllm:m?b=2&a=1").canonical()


@pytest.mark.parametrize(
    "bad, says",
    [
        ("gpt4", "expected 'smoke"),
        ("vllm:", "expected 'smoke"),
        ("openai:model", "openai:MODEL@BASE_URL"),
        ("openai:model@ftp://x", "http(s)"),
        ("vllm:m?replicas=0", "replicas"),
        ("openai:m@http://x?colour=blue", "unknown option 'colour'"),
    ],
)
def test_bad_specs_are_usage_errors_saying_what_is_allowed(bad: str, says: str) -> None:
    with pytest.raises(UsageError, match=None) as err:
        parse_llm_spec(bad)
    assert says in str(err.value) and bad.split("?")[0] in str(err.value)


def test_unknown_engine_option_is_named() -> None:
    from emocaustics.models.poolargs import check_engine_options

    with pytest.raises(UsageError, match="max_model_lenn"):
        check_engine_options(parse_llm_spec("vllm:m?max_model_lenn=10"), "vllm:m?max_model_lenn=10")
    check_engine_options(parse_llm_spec("vllm:m?max_model_len=10&kv_cache_memory_bytes=268435456&enforce_eager=true"),
                         "vllm:m")


def test_engine_option_names_read_from_the_source_are_the_dataclass_fields() -> None:
    import dataclasses

    from vllm.engine.arg_utils import AsyncEngineArgs

    from emocaustics.models.poolargs import engine_option_names

    assert engine_option_names() == {f.name for f in dataclasses.fields(AsyncEngineArgs)}


def test_smoke_model_is_deterministic_and_cached(tmp_path: Path) -> None:
    sample = tmp_path / "sample"
    (sample / "chat").mkdir(parents=True)
    (sample / "chat" / "1.json").write_text(
        json.dumps([{"sentence": "我今天很高兴，因为考试通过了。", "Holder": "A"}], ensure_ascii=False), encoding="utf-8"
    )
    a = build_smoke_model(tmp_path / "a", sample_dir=sample)
    b = build_smoke_model(tmp_path / "b", sample_dir=sample)
    for name in ("model.safetensors", "tokenizer.json", "config.json"):
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
    assert build_smoke_model(tmp_path / "a", sample_dir=sample) == a  # reused, not rebuilt
    config = json.loads((a / "config.json").read_text())
    assert (config["num_hidden_layers"], config["hidden_size"], config["head_dim"], config["num_key_value_heads"]) == (2, 128, 64, 1)
    assert "高兴" in training_text(sample)
    # Another sample text, another model identity (and so other response-cache keys).
    (sample / "chat" / "2.json").write_text(json.dumps([{"sentence": "新的一句话"}], ensure_ascii=False), encoding="utf-8")
    assert model_hash(training_text(sample)) != json.loads((a / "smoke.json").read_text())["hash"]

    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(a)
    prompt = tok.apply_chat_template([{"role": "user", "content": "你好"}], tokenize=False, add_generation_prompt=True)
    assert prompt == "<|im_start|>user\n你好<|im_end|>\n<|im_start|>assistant\n"
    assert tok.decode(tok.encode("没见过的字：鑫")) == "没见过的字：鑫"  # byte-level: nothing is unknown


def test_parse_answer() -> None:
    schema = {"type": "object"}
    assert parse_answer('{"a": 1}', schema) == ({"a": 1}, False, None)
    assert parse_answer('{"a": 1', schema) == ({"a": 1}, True, None)
    value, repaired, error = parse_answer("no json here", schema)
    assert value is None and not repaired and error.startswith("invalid JSON")
    assert parse_answer("free text", None) == (None, False, None)


class CountingLLM:
    name = "counting"

    def __init__(self) -> None:
        self.calls = 0

    async def generate(self, requests: list[ChatRequest]) -> list[Completion]:
        self.calls += len(requests)
        return [
            Completion(text="x", error="boom") if "fail" in r.messages[0]["content"] else Completion(text=r.messages[0]["content"], generated_tokens=1)
            for r in requests
        ]


def _req(text: str, **kw) -> ChatRequest:
    return ChatRequest(messages=({"role": "user", "content": text},), **kw)


def test_cache_hits_misses_and_failures_not_cached(tmp_path: Path) -> None:
    inner = CountingLLM()
    llm = CachedLLM(inner, ResponseCache(tmp_path / "c.sqlite"))
    reqs = [_req("a"), _req("b"), _req("fail")]
    first = asyncio.run(llm.generate(reqs))
    second = asyncio.run(llm.generate(reqs))
    assert [c.text for c in second] == ["a", "b", "x"] and [c.cached for c in second] == [True, True, False]
    assert second[2].error == "boom"  # asked again: failures are not cached
    assert inner.calls == 4 and (llm.usage.cache_hits, llm.usage.cache_misses) == (2, 4)
    assert first[0].text == "a"
    # Key covers schema and sampling.
    k = request_key("m", _req("a"))
    assert k != request_key("m", _req("a", schema={"type": "object"}))
    assert k != request_key("m", _req("a", sampling=Sampling(max_tokens=7)))
    assert k != request_key("other", _req("a"))


def _writer(path: str, start: int) -> None:
    cache = ResponseCache(path)
    for i in range(start, start + 200):
        cache.put_many("m", [(f"k{i}", Completion(text=str(i)))])


def test_cache_is_process_safe(tmp_path: Path) -> None:
    path = str(tmp_path / "shared.sqlite")
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(path, n * 200)) for n in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert all(p.exitcode == 0 for p in procs)
    cache = ResponseCache(path)
    assert len(cache.get_many([f"k{i}" for i in range(600)])) == 600
    assert cache.get_many(["k0", "k599"])["k599"].text == "599"


def test_cache_writes_are_committed_beside_the_caller_and_never_lost(tmp_path: Path) -> None:
    """Writes go to a writer thread: a put is readable at once from the same cache, visible to another connection
    after `flush`, and committed by `close` (and at exit: test_cache_is_process_safe's children never flush)."""
    path = tmp_path / "w.sqlite"
    cache = ResponseCache(path)
    cache.put_many("m", [(f"k{i}", Completion(text=str(i))) for i in range(300)])
    assert cache.get_many(["k0", "k299"])["k299"].text == "299"  # pending or committed, served either way
    cache.flush()
    other = ResponseCache(path)
    assert set(other.get_many([f"k{i}" for i in range(300)])) == {f"k{i}" for i in range(300)}
    cache.put_many("m", [("late", Completion(text="late"))])
    cache.close()
    cache.close()  # idempotent
    assert other.get_many(["late"])["late"].text == "late"
    with pytest.raises(RuntimeError, match="closed"):
        cache.put_many("m", [("after", Completion(text="x"))])
    other.close()


def test_anthropic_specs_parse_and_make_a_client():
    from emocaustics.models.anthropic_chat import AnthropicChatLLM
    from emocaustics.models.factory import make_llm
    from emocaustics.models.spec import parse_llm_spec

    spec = parse_llm_spec("anthropic:claude-test@http://127.0.0.1:9?concurrency=4")
    assert (spec.kind, spec.model, spec.base_url, spec.client) == ("anthropic", "claude-test", "http://127.0.0.1:9", {})
    assert spec.limits.concurrency == 4
    llm = make_llm(parse_llm_spec("anthropic:claude-test@http://127.0.0.1:9"))
    assert isinstance(llm.llm, AnthropicChatLLM)  # behind the endpoint's circuit breaker (models/breaker.py)
    with pytest.raises(UsageError, match="unknown option 'replicas'"):
        parse_llm_spec("anthropic:claude-test?replicas=2")
    with pytest.raises(UsageError, match="anthropic:MODEL"):
        parse_llm_spec("anthropic:claude-test@ftp://x")
