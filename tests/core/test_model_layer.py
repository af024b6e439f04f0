"""The model layer's shape (issue 40 point 4): one explicit interface (`models.base.LLM`) that every provider's model
and every layer in front of one offers in full, with no `__getattr__` passing unknown names through; providers found
by name in `models.registry`; and no test of a provider's name (`"openai:"`, `kind == "anthropic"`, REMOTE_KINDS ...)
outside the registry but in the files allowed below, whose counts may only go down."""

from __future__ import annotations

import ast
import asyncio
from pathlib import Path

import pytest

from emocaustics.models.base import LLM, ChatRequest, Completion, Layer, ModelBase, as_model

PACKAGE = Path(__file__).resolve().parents[2] / "emocaustics"
PROVIDER_NAMES = {"openai", "anthropic", "ollama", "openai:", "anthropic:", "ollama:"}
PROVIDER_CONSTANTS = {"REMOTE_KINDS", "REMOTE_PREFIXES"}
# Files that still test a provider's name, and how often (2026-11-29): spec.py parses the built-in spec syntaxes (its
# endpoint_name still spells anthropic's default URL, `Provider.home`); the others name embedder kinds (an `openai:`
# embedder is no model of the registry). A provider's key variables and pre-flight request are the registry's.
ALLOWED = {
    "models/spec.py": 3,
    "models/embedders.py": 4,
    "tasks/longdialogue/score/plan.py": 1,
}
# Classes that still pass unknown attribute names through: a task's own wrapper (ecpe's CutAnswers).
GETATTR_ALLOWED = {"tasks/ecpe/solver.py": 1}


def _names_a_provider(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value in PROVIDER_NAMES
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(_names_a_provider(e) for e in node.elts)
    return isinstance(node, ast.Name) and node.id in PROVIDER_CONSTANTS


def provider_tests(source: str) -> int:
    """Comparisons and startswith/endswith calls with a provider's name (or a tuple of them) as an operand."""
    n = 0
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare) and any(_names_a_provider(x) for x in [node.left, *node.comparators]):
            n += 1
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr in ("startswith", "endswith") and node.args and _names_a_provider(node.args[0])):
            n += 1
    return n


def class_getattrs(source: str) -> int:
    return sum(1 for cls in ast.walk(ast.parse(source)) if isinstance(cls, ast.ClassDef)
               for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "__getattr__")


def _counts(count) -> dict[str, int]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        n = count(path.read_text(encoding="utf-8"))
        if n:
            out[str(path.relative_to(PACKAGE))] = n
    return out


def test_the_counters_find_planted_cases():
    assert provider_tests('if spec.startswith(("openai:", "anthropic:")): pass') == 1
    assert provider_tests('x = kind == "anthropic" or kind in REMOTE_KINDS') == 2
    assert provider_tests('x = kind == "smoke"; y = "openai:" + name') == 0
    assert class_getattrs("class A:\n    def __getattr__(self, n): pass\ndef __getattr__(n): pass\n") == 1


def test_no_provider_name_tests_outside_the_registry():
    found = _counts(provider_tests)
    found.pop("models/registry.py", None)
    over = {f: n for f, n in found.items() if n > ALLOWED.get(f, 0)}
    assert not over, f"provider names tested outside models/registry.py (ask the provider: registry.is_remote, " \
                     f"LLMSpec.remote, .priced): {over}"


def test_no_attribute_pass_through():
    in_models = [p.name for p in (PACKAGE / "models").rglob("*.py") if "def __getattr__" in p.read_text("utf-8")]
    assert not in_models, in_models  # module level included: no lazy pass-through either
    found = _counts(class_getattrs)
    assert all(n <= GETATTR_ALLOWED.get(f, 0) for f, n in found.items()), found


def _layers() -> list[type]:
    from emocaustics.evallog.record import RecordingLLM
    from emocaustics.models.batch import BatchLLM
    from emocaustics.models.breaker import BreakerLLM
    from emocaustics.models.budget import BudgetLLM
    from emocaustics.models.cache import CachedLLM
    from emocaustics.solve.item import CountingLLM

    return [CachedLLM, BatchLLM, BreakerLLM, BudgetLLM, RecordingLLM, CountingLLM]


def test_every_provider_model_and_layer_has_the_whole_interface():
    from emocaustics.models.anthropic_chat import AnthropicChatLLM
    from emocaustics.models.openai_chat import OpenAIChatLLM
    from emocaustics.models.pool import ModelPool
    from emocaustics.models.vllm_actor import EngineLLM

    for cls in [OpenAIChatLLM, AnthropicChatLLM, ModelPool, EngineLLM, *_layers()]:
        assert issubclass(cls, ModelBase), cls
        assert "__getattr__" not in vars(cls), cls
    assert all(issubclass(cls, Layer) for cls in _layers())


class Bare:
    """A model written to the two required members only (a test double, a plug-in that does not use ModelBase)."""

    name = "bare"
    json_mode = "plain"  # a client's own attribute: not part of the interface

    async def generate(self, requests: list[ChatRequest]) -> list[Completion]:
        return [Completion(text="A", prompt_tokens=3) for _ in requests]


def test_layers_answer_the_interface_and_nothing_else(tmp_path):
    from emocaustics.models.breaker import BreakerLLM
    from emocaustics.models.cache import CachedLLM, ResponseCache

    breaker = BreakerLLM(Bare(), "bare@here")
    llm = CachedLLM(breaker, ResponseCache(tmp_path / "responses.sqlite"))
    assert isinstance(llm, LLM) and isinstance(as_model(Bare()), LLM)
    assert (llm.name, llm.cache_id, llm.runs_remotely) == ("bare", "bare", False)
    with pytest.raises(AttributeError):
        breaker.json_mode  # noqa: B018 - no longer passed through to the client

    async def go():
        req = ChatRequest(messages=({"role": "user", "content": "q"},))
        await llm.generate([req])
        await llm.generate([req])
        out = await llm.run(lambda m, item: m.generate([req]), [1, 2])
        stats = await llm.stats()
        await llm.aclose()
        return out, stats

    out, stats = asyncio.run(go())
    assert [o[0].text for o in out] == ["A", "A"]
    assert stats == {"cache_hits": 3, "cache_misses": 1}  # the bare model has no counters of its own


def test_the_registry_names_its_providers_and_an_unknown_one():
    from emocaustics.core.errors import UsageError
    from emocaustics.models.registry import is_remote, provider
    from emocaustics.models.spec import parse_llm_spec

    assert all(provider(k).name == k for k in ("openai", "anthropic", "ollama", "vllm", "smoke"))
    assert is_remote("openai:m@http://x/v1?concurrency=2") and is_remote("anthropic:claude")
    assert not is_remote("smoke") and not is_remote("vllm:Qwen/Qwen2.5-0.5B") and not is_remote("nobody:x")
    # a parsed spec keeps its provider's facts: read once, where it is parsed
    specs = {s: parse_llm_spec(s) for s in ("anthropic:claude", "openai:m@http://x/v1", "ollama:llama3", "smoke",
                                            "vllm:Qwen/Qwen2.5-0.5B")}
    assert [(s.remote, s.priced) for s in specs.values()] == [(True, True), (True, True), (True, False),
                                                              (False, False), (False, False)]
    with pytest.raises(UsageError, match="unknown model provider 'nobody'; known: anthropic, litellm, ollama"):
        provider("nobody")
