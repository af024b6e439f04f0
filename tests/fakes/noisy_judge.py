"""A stand-in for an LLM judge behind an OpenAI-compatible API (a remote model cannot be reached here): it answers each
conversation of a dialogue-judge round with that conversation's worker ratings plus fresh Gaussian noise (sd 10,
clipped to 0-100) on every call, so that a run's r is what its noise implies; faults as `FakeOpenAIServer`'s."""

from __future__ import annotations

import json
import random
from typing import Any

from emocaustics.tasks.dialoguejudge import prompts
from fakes.openai_chat import FakeOpenAIServer, Faults


class NoisyJudge(FakeOpenAIServer):
    def __init__(self, samples: list[Any], faults: Faults | None = None, seed: int = 1) -> None:
        super().__init__(faults)
        self.truth = {prompts.user_message(s.input): s.target for s in samples}  # the conversation as the judge sees it
        self.rng = random.Random(seed)

    def answer_text(self, body: dict[str, Any]) -> str:
        rated = self.truth[body["messages"][-1]["content"]]
        return json.dumps({k: min(100, max(0, round(v + self.rng.gauss(0, 10)))) for k, v in rated.items()})
