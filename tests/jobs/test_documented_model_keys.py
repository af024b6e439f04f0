"""Issue 41, point 11: every key docs/models.md gives for a model is accepted where the docs put it. The keys are read
from the docs themselves (the backticked names of the sections about endpoints), so a key
documented later and not accepted fails here; a backticked word of those sections that is not a model key is listed
in NOT_KEYS with what it is."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from emocaustics.jobs.spec import JobSpec
from emocaustics.models.spec import parse_llm_spec

DOCS = Path(__file__).resolve().parents[2] / "docs" / "models.md"
ENDPOINT_SECTIONS = ("Spec strings", "Dead endpoints", "Cost and rate limits")
NOT_KEYS = {
    # spec kinds, embedders, libraries
    "minilm", "smoke", "transformers", "openai", "anthropic", "hf", "huggingface", "generate",
    # the entry's own key names and fields that are not options of an endpoint
    "spec", "engine", "price", "batch_input", "batch_output",
    # keys of local replicas (the placement section of docs/clusters.md), of the job, of the results
    "replicas", "gpus_per_replica", "gpus", "cpus", "tp", "placement", "max_cost_usd", "cost_usd", "custom_id",
    "prefix_cache_hit_rate", "max_tokens",
    # method names and option values
    "direct", "rag", "window",
}
SAMPLE = {  # a valid value of each documented key
    "concurrency": 4, "timeout": 30, "max_retries": 2, "json_mode": "plain", "max_connection_failures": 3,
    "max_server_errors": 3, "stall_seconds": 40, "max_throttled": 5, "rpm": 600, "tpm": 100000, "batch_size": 100,
    "batch_poll": 5, "batch_quiet": 1, "batch_max_wait": 10,
}


def _documented(*titles: str) -> list[str]:
    sections = {s.splitlines()[0]: s for s in re.split(r"^## ", DOCS.read_text(encoding="utf-8"), flags=re.M)}
    words = {w for t in titles for w in re.findall(r"`([a-z][a-z0-9_]*):?`", sections[t])}
    return sorted(words - NOT_KEYS)


ENDPOINT_KEYS = _documented(*ENDPOINT_SECTIONS)


def test_the_docs_name_the_keys_this_test_checks():
    assert {"batch_poll", "batch_size", "batch_quiet", "batch_max_wait", "timeout", "max_retries"} <= set(ENDPOINT_KEYS)
    missing = [k for k in ENDPOINT_KEYS if k not in SAMPLE]
    assert not missing, f"docs/models.md names {missing}: give each a value in SAMPLE (or list it in NOT_KEYS)"


def _client(entry: dict) -> dict:
    job = JobSpec.model_validate({"name": "keys", "models": {"m": entry},
                                  "runs": [{"task": "aer", "model": "m", "options": {"method": "llm"}}]})
    parsed = job.models["m"].parsed()
    return {**parsed.endpoint_options(), **parsed.engine}


@pytest.mark.parametrize("spec", ["openai:m@http://127.0.0.1:9/v1", "anthropic:claude-x"])
@pytest.mark.parametrize("key", ENDPOINT_KEYS)
def test_an_endpoint_key_is_accepted_beside_spec_and_in_the_spec_query(key, spec):
    value = SAMPLE[key]
    assert _client({"spec": spec, key: value})[key] == value  # a job's model entry, as the docs show
    assert parse_llm_spec(f"{spec}?{key}={value}").endpoint_options()[key] == value  # the spec string's query


def test_a_client_key_beside_spec_and_in_engine_is_refused_and_a_local_engine_refuses_batch_keys():
    with pytest.raises(ValueError, match="timeout is given both beside spec and in engine"):
        _client({"spec": "openai:m@http://127.0.0.1:9/v1", "timeout": 3, "engine": {"timeout": 4}})
    with pytest.raises(Exception, match="batch_poll needs an openai: or anthropic: model"):
        _client({"spec": "vllm:some/model", "batch_poll": 5})
