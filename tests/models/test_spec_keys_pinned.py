"""The strings a model is known by stay what they were (issue 54 item 1): `canonical()` (the pool's name, a client's
name, a litellm endpoint's response-cache id) and `identity` (the response cache's and the provenance's key) of spec
strings and of job model entries, pinned as the URL-query round trip gave them before the typed config replaced it.
The response cache is shared across runs: a changed string would answer nothing from it."""

from __future__ import annotations

import pytest

from emocaustics.jobs.modelentry import ModelSpec
from emocaustics.models.spec import parse_llm_spec

STRINGS = [
    ("smoke", "smoke", None),
    ("smoke?max_model_len=512&replicas=2", "smoke?replicas=2&max_model_len=512", None),
    ("vllm:org/m?tp=2&gpus=2&dtype=float16&max_num_seqs=8", "vllm:org/m?tp=2&gpus=2&dtype=float16&max_num_seqs=8",
     "vllm:org/m?dtype=float16&max_num_seqs=8"),
    ("openai:gpt-4o@http://h:1/v1?concurrency=8&rpm=60&timeout=30&batch=true&batch_poll=5",
     "openai:gpt-4o@http://h:1/v1?batch=true&batch_poll=5&concurrency=8&rpm=60&timeout=30",
     "openai:gpt-4o@http://h:1/v1"),
    ("anthropic:claude-x?sampling=omit&json_mode=plain&stall_seconds=45&max_throttled=3",
     "anthropic:claude-x?json_mode=plain&max_throttled=3&sampling=omit&stall_seconds=45", "anthropic:claude-x"),
    ("litellm:gemini/g-1?api_version=v1&tpm=1000.5&concurrency=2",
     "litellm:gemini/g-1?api_version=v1&concurrency=2&tpm=1000.5", "litellm:gemini/g-1"),
]

ENTRIES = [
    ({"spec": "smoke", "replicas": 2, "engine": {"max_model_len": 512}}, "smoke?replicas=2&max_model_len=512", None),
    ({"spec": "vllm:org/m", "gpus_per_replica": 2, "placement": "spread", "engine": {"dtype": "float16"}},
     "vllm:org/m?tp=2&gpus=2&placement=spread&dtype=float16", "vllm:org/m?dtype=float16"),
    ({"spec": "openai:gpt-4o@http://h:1/v1", "concurrency": 8, "rpm": 60, "tpm": 9000, "stall_seconds": 30,
      "batch": True, "engine": {"timeout": 30}},
     "openai:gpt-4o@http://h:1/v1?batch=true&concurrency=8&max_connection_failures=5&max_server_errors=10&rpm=60.0"
     "&stall_seconds=30.0&timeout=30&tpm=9000.0", "openai:gpt-4o@http://h:1/v1"),
    ({"spec": "anthropic:claude-x@http://h:2", "timeout": 20, "max_retries": 2, "batch_size": 10},
     "anthropic:claude-x@http://h:2?batch_size=10&concurrency=64&max_connection_failures=5&max_retries=2"
     "&max_server_errors=10&timeout=20", "anthropic:claude-x@http://h:2"),
    ({"spec": "openai:m@http://h:1/v1?json_mode=plain", "max_server_errors": 3},
     "openai:m@http://h:1/v1?concurrency=64&json_mode=plain&max_connection_failures=5&max_server_errors=3",
     "openai:m@http://h:1/v1"),
]


@pytest.mark.parametrize(("text", "canonical", "identity"), STRINGS)
def test_a_spec_strings_names_are_pinned(text: str, canonical: str, identity: str | None) -> None:
    spec = parse_llm_spec(text)
    assert spec.canonical() == canonical
    assert parse_llm_spec(canonical) == spec  # the canonical string is the same spec
    if identity is not None:  # the smoke model's holds its recipe's hash
        assert spec.identity == identity


@pytest.mark.parametrize(("entry", "canonical", "identity"), ENTRIES)
def test_a_job_entrys_names_are_pinned(entry: dict, canonical: str, identity: str | None) -> None:
    spec = ModelSpec.model_validate(entry).parsed()
    assert spec.canonical() == canonical
    assert parse_llm_spec(canonical).canonical() == canonical
    if identity is not None:
        assert spec.identity == identity
