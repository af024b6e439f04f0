"""A local model's pool is named by its spec's canonical form computed once: `get_pool` keys the registry on it and
hands it to `pool_arguments` (which computed it again for the pool's name). No Ray, no engine."""

from __future__ import annotations

from emocaustics.models import pool as pool_module
from emocaustics.models.spec import LLMSpec, parse_llm_spec


def test_a_new_pool_computes_its_specs_canonical_form_once(monkeypatch) -> None:
    spec, made, computed = parse_llm_spec("vllm:org/m?max_model_len=64&replicas=2"), [], []
    canonical = LLMSpec.canonical

    def counted(self: LLMSpec) -> str:
        computed.extend([self] if self is spec else [])  # `identity` asks a copy of its own (placement left out)
        return canonical(self)

    monkeypatch.setattr(LLMSpec, "canonical", counted)
    monkeypatch.setattr(pool_module, "_POOLS", {})
    monkeypatch.setattr(pool_module, "ModelPool", lambda **kwargs: made.append(kwargs) or kwargs)
    assert pool_module.get_pool(spec)["name"] == "vllm:org/m?replicas=2&max_model_len=64"
    assert len(made) == 1 and len(computed) == 1
