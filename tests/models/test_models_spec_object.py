"""A model spec travels as an `LLMSpec` past the edges (issue 26): the job runner (`run`, `eval`) parses the string once,
and the plan, the pool and the factory take the object; strings are still taken where users hand them in. The smoke
model is recognised by its kind (`LLMSpec.kind == "smoke"`), not by splitting strings. No engine starts here."""

from __future__ import annotations


import pytest

from emocaustics.core.task import Sample
from emocaustics.models import pool as pool_module
from emocaustics.models import poolargs
from emocaustics.models import spec as spec_module
from emocaustics.models.factory import make_llm
from emocaustics.models.spec import as_llm_spec, parse_llm_spec

ENDPOINT = "openai:m@http://127.0.0.1:9/v1?max_retries=1&concurrency=4"


@pytest.mark.parametrize("text, kind", [
    ("smoke", "smoke"), ("smoke?replicas=2&max_model_len=512", "smoke"), ("vllm:smoke", "vllm"),
    ("vllm:Qwen/Qwen2.5-7B-Instruct", "vllm"), (ENDPOINT, "openai")])
def test_the_tiny_model_is_the_smoke_kind_and_a_model_named_smoke_is_not(text, kind):
    assert parse_llm_spec(text).kind == kind


@pytest.mark.parametrize("text, instead", [
    ("hf:smoke", "use smoke for local weights"), ("huggingface:org/m?max_batch=4", "use vllm:org/m for local weights"),
    ("hf:", "use vllm:PATH_OR_NAME for local weights")])
def test_the_removed_transformers_provider_is_refused_naming_what_to_use(text, instead):
    kind = text.partition(":")[0]
    with pytest.raises(spec_module.UsageError, match=f"the {kind}: provider was removed; {instead}, ollama:MODEL, "
                                                     r"or openai:MODEL@URL \(any OpenAI-compatible server\)"):
        parse_llm_spec(spec_module.expand_shorthand(text))


def test_as_llm_spec_parses_a_string_and_passes_an_object_through():
    spec = parse_llm_spec(ENDPOINT)
    assert as_llm_spec(spec) is spec
    assert as_llm_spec(ENDPOINT) == spec and as_llm_spec(ENDPOINT) is not spec


def test_make_llm_takes_the_parsed_spec_and_its_options():  # a string is parsed at the edges, never here
    llm, other = make_llm(parse_llm_spec(ENDPOINT)), make_llm(parse_llm_spec(ENDPOINT + "&concurrency=2"))
    assert llm.name == "openai:m@http://127.0.0.1:9/v1?concurrency=4&max_retries=1" and type(llm.llm) is type(other.llm)
    assert (llm.concurrency, other.concurrency) == (4, 2)


def test_equal_specs_share_one_pool_whether_string_or_object(monkeypatch):
    made: list[dict] = []

    class FakePool:  # the registry's key and lookup, without Ray or an engine
        def __init__(self, **kwargs):
            made.append(kwargs)

    monkeypatch.setattr(pool_module, "_POOLS", {})
    monkeypatch.setattr(pool_module, "ModelPool", FakePool)
    monkeypatch.setattr(poolargs, "pool_arguments", lambda parsed, name: {"name": name})
    text = "vllm:org/m?max_model_len=4096&replicas=2"
    first = pool_module.get_pool(parse_llm_spec(text))
    assert pool_module.get_pool(parse_llm_spec(text)) is first
    assert pool_module.get_pool(parse_llm_spec("vllm:org/m?replicas=2&max_model_len=4096")) is first  # reordered
    assert pool_module.get_pool(parse_llm_spec("vllm:org/m?replicas=2")) is not first
    assert made == [{"name": "vllm:org/m?replicas=2&max_model_len=4096", "detached": False},
                    {"name": "vllm:org/m?replicas=2", "detached": False}]


def test_run_kind_knows_the_smoke_model_by_its_spec(tmp_path):
    from emocaustics.jobs.configs import resolve
    from emocaustics.jobs.spec import JobSpec

    job = JobSpec.model_validate({
        "name": "kinds", "dataset": {"aer": {"split": "sample"}},
        "models": {"vllm_smoke": {"spec": "smoke?max_model_len=512"}, "hub": {"spec": "vllm:org/smoke"},
                   "api": {"spec": "openai:m@http://127.0.0.1:1/v1"}},
        "grid": {"task": ["aer"], "model": ["vllm_smoke", "hub", "api"], "options": {"method": "llm"}},
        "runs": [{"task": "aer", "options": {"method": "oracle"}}]})
    kinds = {c.model or c.options.method: c.kind for c in resolve(job, tmp_path).configs}
    assert kinds == {"vllm_smoke": "engine-check", "hub": "model", "api": "model",
                     "oracle": "calibration"}


def test_model_source_knows_the_smoke_model_by_its_spec():
    from emocaustics.models.registry import reach

    assert reach(parse_llm_spec("smoke?replicas=2"), network=False) == "built locally (tiny random model)"
    assert reach(parse_llm_spec(ENDPOINT), network=False) == "endpoint"


def test_the_job_runner_hands_the_plan_the_parsed_job_model(tmp_path, monkeypatch):
    from emocaustics.jobs.configs import resolve
    from emocaustics.jobs.spec import JobSpec

    job = JobSpec.model_validate({
        "name": "object", "dataset": {"aer": {"split": "sample"}},
        "models": {"api": {"spec": "openai:m@http://127.0.0.1:1/v1", "concurrency": 3, "max_server_errors": 7}},
        "runs": [{"task": "aer", "model": "api", "options": {"method": "llm"}}]})
    import emocaustics.models.factory as factory
    from emocaustics.core.task import Loaded, ScoreContext
    from emocaustics.jobs import together

    (cfg,) = resolve(job, tmp_path).configs
    seen = []

    class Refused(Exception):
        pass

    def make_llm(spec, **kwargs):  # the one solving path (jobs/together.py) asks the factory with the parsed spec
        seen.append(spec)
        raise Refused

    monkeypatch.setattr(factory, "make_llm", make_llm)
    monkeypatch.setattr(cfg.task, "prepare", lambda samples, options, ctx: samples)  # a bare sample: nothing to add
    with pytest.raises(Refused):
        together.solve_together(job, [cfg], {cfg.label: Loaded([Sample("1", None)])},
                                ScoreContext(cache=tmp_path), lambda label: None, lambda label: None)
    assert seen == [job.models["api"].parsed()]
    assert isinstance(seen[0], spec_module.LLMSpec) and seen[0].limits.concurrency == 3
    assert seen[0].limits.max_server_errors == 7
