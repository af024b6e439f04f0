"""Counters every LLM wrapper keeps: calls that reached a model, tokens, failures, cache hits."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from emocaustics.models.base import Completion


@dataclass(slots=True)
class Usage:
    calls: int = 0  # requests answered by a model (not by the cache)
    errors: int = 0  # requests that ended with Completion.error set
    prompt_tokens: int = 0
    generated_tokens: int = 0
    cached_prompt_tokens: int = 0  # prompt tokens served from vLLM's prefix cache
    cache_hits: int = 0  # requests answered by the response cache
    cache_misses: int = 0

    def count(self, completions: list[Completion]) -> None:
        for c in completions:
            self.calls += 1
            self.errors += c.error is not None
            self.prompt_tokens += c.prompt_tokens
            self.generated_tokens += c.generated_tokens

    def add(self, other: dict[str, int] | "Usage") -> None:
        items = other.as_dict() if isinstance(other, Usage) else other
        for key, value in items.items():
            if key in Usage.__slots__:  # type: ignore[attr-defined]
                setattr(self, key, getattr(self, key) + int(value))

    def as_dict(self) -> dict[str, int]:
        return asdict(self)
