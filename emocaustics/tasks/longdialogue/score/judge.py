"""The LLM judge of event matching: batched, cached, one retry, failures counted (never hidden).

Any `emocaustics.models.base.LLM` can judge: `openai:MODEL@URL`, `vllm:...`, `smoke` resolve through
`emocaustics.models.factory.make_llm` (imported lazily: the vLLM path lives in the model-hosting package and plugs in
without changes here). All questions of a scoring round go to the LLM in one `generate` call, so a vLLM engine can
batch them; answers are cached per (gt, pred) pair for the life of the judge (and on disk when the LLM is built
with a cache directory).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from emocaustics.models.base import LLM, ChatRequest, Completion, Sampling
from emocaustics.models.spec import LLMSpec
from emocaustics.tasks.longdialogue.score.prompts import JUDGE_SCHEMA, judge_messages

Pair = tuple[str, str]


def parse_verdict(c: Completion) -> bool | None:
    """True/False for an answer that says 0 or 1 (as {"same": 0|1} or a bare digit); None otherwise."""
    if c.error:
        return None
    value: Any = c.parsed
    if value is None:
        text = (c.text or "").strip()
        try:
            value = json.loads(text)
        except ValueError:
            value = text
    if isinstance(value, dict):
        value = value.get("same")
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip() in ("0", "1"):
        return value.strip() == "1"
    return None


@dataclass(slots=True)
class JudgeStats:
    asked: int = 0  # distinct questions sent to the LLM
    retried: int = 0
    failures: int = 0  # still not 0/1 after the retry
    cache_hits: int = 0


class EventJudge:
    def __init__(self, llm: LLM, max_tokens: int = 16) -> None:
        self.llm = llm
        self.name = llm.name
        self.sampling = Sampling(max_tokens=max_tokens, temperature=0.0)
        self.cache: dict[Pair, bool | None] = {}
        self.stats = JudgeStats()

    def _requests(self, pairs: list[Pair], retry: bool) -> list[ChatRequest]:
        return [ChatRequest(messages=judge_messages(g, p, retry), schema=JUDGE_SCHEMA, sampling=self.sampling)
                for g, p in pairs]

    async def decide(self, pairs: Iterable[Pair]) -> dict[Pair, bool | None]:
        wanted = list(dict.fromkeys(pairs))
        todo = [p for p in wanted if p not in self.cache]
        self.stats.cache_hits += len(wanted) - len(todo)
        if todo:
            self.stats.asked += len(todo)
            answers = await self.llm.generate(self._requests(todo, retry=False))
            verdicts = {p: parse_verdict(c) for p, c in zip(todo, answers, strict=True)}
            again = [p for p in todo if verdicts[p] is None]
            if again:
                self.stats.retried += len(again)
                answers2 = await self.llm.generate(self._requests(again, retry=True))
                for p, c in zip(again, answers2, strict=True):
                    verdicts[p] = parse_verdict(c)
                    self.stats.failures += verdicts[p] is None
            self.cache.update(verdicts)
        return {p: self.cache[p] for p in wanted}


def make_judge(spec: LLMSpec | None) -> EventJudge | None:
    """None -> no judge (embedding only); a parsed spec (parsed where it was given: a job, `--judge`) -> its model."""
    if spec is None:
        return None
    from emocaustics.models.factory import make_llm

    return EventJudge(make_llm(spec))
