"""The `hf:` backend (transformers in Ray actors: models/hf_actor.py, models/hf_generate.py) on the smoke model, on CPU.

Specs parse, expand and name their errors without loading anything; `make_llm("hf:smoke")` answers plain text and
schema-constrained JSON (xgrammar masks the tokens the schema does not allow: the answer parses and validates even
though the model's weights are random), collects concurrent requests into padded `generate` calls of at most
`max_batch`, keeps requests with other sampling settings apart, and counts tokens; `emocaustics eval` on `hf:smoke`
writes a run folder with scores. All tests share one replica (one `hf:smoke` pool per session, ~10 s to load).
"""

from __future__ import annotations

import asyncio
import json

import jsonschema
import pytest

from emocaustics.core.errors import UsageError
from emocaustics.models.base import ChatRequest, Sampling
from emocaustics.models.poolargs import pool_arguments
from emocaustics.models.spec import expand_shorthand, parse_llm_spec

SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string", "enum": ["A", "B", "C", "D"]},
                   "reason": {"type": "string", "maxLength": 12}},
    "required": ["answer", "reason"],
    "additionalProperties": False,
}


def _ask(content: str, *, schema: dict | None = None, max_tokens: int = 16, temperature: float = 0.0) -> ChatRequest:
    return ChatRequest(messages=({"role": "system", "content": "Answer briefly."}, {"role": "user", "content": content}),
                       schema=schema, sampling=Sampling(max_tokens=max_tokens, temperature=temperature, seed=7))


def test_hf_specs_parse_expand_and_name_their_errors():
    assert expand_shorthand("huggingface:Qwen/Qwen2.5-0.5B-Instruct?max_batch=4") == \
        "hf:Qwen/Qwen2.5-0.5B-Instruct?max_batch=4"
    assert expand_shorthand("hf:/models/q") == "hf:/models/q"
    spec = parse_llm_spec("huggingface:Qwen/Q?replicas=2&max_batch=4&dtype=bfloat16&gpus=1")
    assert (spec.kind, spec.model, spec.replicas, spec.gpus) == ("hf", "Qwen/Q", 2, 1)
    assert spec.engine == {"max_batch": 4, "dtype": "bfloat16"}
    assert spec.canonical() == "hf:Qwen/Q?replicas=2&gpus=1&dtype=bfloat16&max_batch=4"
    assert parse_llm_spec(spec.canonical()) == spec
    with pytest.raises(UsageError, match="expected 'hf:MODEL_OR_PATH'"):
        expand_shorthand("hf:")
    with pytest.raises(UsageError, match=r"unknown option 'max_model_len' \(hf options: replicas, gpus, cpus, "
                                         r"placement, max_batch"):
        parse_llm_spec("hf:x/y?max_model_len=4096")
    with pytest.raises(UsageError, match="batch_size needs an openai: or anthropic: model"):  # provider batch APIs
        parse_llm_spec("hf:x/y?batch_size=4")
    for bad in ("hf:x/y?tp=2", "hf:x/y?gpus=2"):
        with pytest.raises(UsageError, match="at most one GPU each"):
            parse_llm_spec(bad)


def test_hf_smoke_pool_arguments_load_the_smoke_folder_with_the_transformers_actor():
    from emocaustics.models.hf_actor import HFModelActor
    from emocaustics.models.smoke import build_smoke_model

    args = pool_arguments(parse_llm_spec("hf:smoke?max_batch=2&replicas=2"))
    folder = build_smoke_model()
    assert args["actor_cls"] is HFModelActor and args["model"] == str(folder) and args["replicas"] == 2
    # the folder (its hash) is part of the response-cache id; placement is not
    assert args["cache_id"] == f"hf:smoke:{folder.name}?max_batch=2"
    assert args["engine_opts"] == {"max_batch": 2}


@pytest.fixture(scope="module")
def hf_llm(ray_local):
    from emocaustics.models.factory import make_llm

    return make_llm(parse_llm_spec("hf:smoke"))  # the pool eval's `--model hf:smoke` below shares (one pool per spec and process)


async def _replica_stats(llm) -> dict:
    return (await llm.stats())["per_replica"][0]


@pytest.mark.slow
def test_plain_text_and_schema_constrained_json_with_token_counts(hf_llm):
    async def go():
        before = await _replica_stats(hf_llm)
        out = await hf_llm.generate([_ask("小明说今天的会议又推迟了，他有点生气。"),
                                     _ask("Which is the cause?", schema=SCHEMA, max_tokens=64),
                                     _ask("Say something.", max_tokens=3)])
        return before, out, await _replica_stats(hf_llm)

    before, (plain, js, short), after = asyncio.run(go())
    assert plain.ok and isinstance(plain.text, str) and plain.parsed is None
    assert 0 < plain.generated_tokens <= 16 and plain.prompt_tokens > 10
    assert js.ok, js.error
    value = json.loads(js.text)  # the text itself is valid JSON: constrained, not repaired
    jsonschema.validate(value, SCHEMA)
    assert js.parsed == value and not js.repaired
    # rows of one batch keep their own max_tokens
    assert 0 < short.generated_tokens <= 3
    assert after["calls"] - before["calls"] == 3
    assert after["prompt_tokens"] - before["prompt_tokens"] == plain.prompt_tokens + js.prompt_tokens + \
        short.prompt_tokens
    assert after["generated_tokens"] - before["generated_tokens"] == \
        plain.generated_tokens + js.generated_tokens + short.generated_tokens
    assert after["batches"] - before["batches"] == 1  # one padded generate call for the three


@pytest.mark.slow
def test_concurrent_requests_share_batches_of_at_most_max_batch_by_sampling(hf_llm):
    async def go():
        before = await _replica_stats(hf_llm)
        # two concurrent calls, 10 greedy requests in all: max_batch 8 -> two generate calls, not ten
        greedy = await asyncio.gather(hf_llm.generate([_ask(f"q{i}", max_tokens=4) for i in range(5)]),
                                      hf_llm.generate([_ask(f"r{i}", max_tokens=4) for i in range(5)]))
        middle = await _replica_stats(hf_llm)
        # sampled requests cannot share a greedy call: 3 greedy + 2 sampled -> two generate calls
        mixed = await hf_llm.generate([_ask("a", max_tokens=4), _ask("b", max_tokens=4, temperature=0.8),
                                       _ask("c", max_tokens=4), _ask("d", max_tokens=4, temperature=0.8),
                                       _ask("e", max_tokens=4, schema=SCHEMA)])
        return before, greedy, middle, mixed, await _replica_stats(hf_llm)

    before, greedy, middle, mixed, after = asyncio.run(go())
    assert all(c.ok for part in greedy for c in part) and len(greedy[0]) == len(greedy[1]) == 5
    assert middle["batches"] - before["batches"] == 2 and middle["calls"] - before["calls"] == 10
    assert len(mixed) == 5 and all(c.generated_tokens <= 4 for c in mixed)
    assert after["batches"] - middle["batches"] == 2


@pytest.mark.slow
def test_eval_on_hf_smoke_writes_a_run_with_scores(hf_llm, tmp_path, capsys):
    import polars as pl

    from emocaustics.cli import main
    from tasks.aer.aer_fixtures import standard_dataset

    data = standard_dataset(tmp_path / "aer")
    out = tmp_path / "run"
    status = main(["eval", "aer", "--model", "hf:smoke", "--limit", "2", "-T", "context=none", "-D", f"data={data}",
                   "--out", str(out)])
    assert status == 0, capsys.readouterr().err  # constrained JSON: even random weights answer in the schema
    scores = pl.read_parquet(out / "scores.parquet")
    assert scores["sample_id"].to_list() == ["q-1", "q-2"] and scores["failed"].sum() == 0
    row = pl.read_csv(out / "summary.csv").row(0, named=True)
    assert (row["run"], row["model"], row["samples"], row["llm_calls"]) == ("aer_llm_smoke_context=none", "smoke", 2, 2)
    assert row["tokens"] > row["generated_tokens"] > 0  # usage reached the summary
    assert row["kind"] == "engine-check"  # random weights: never presented as a model score
    assert "hf:smoke" in (out / "config.yaml").read_text()
