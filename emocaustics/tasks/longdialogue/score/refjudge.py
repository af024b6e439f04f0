"""`--compat reference`: the published scripts' judge and the failures they cannot survive.

The reference asks one question per call with its own prompt (`prompts.reference_judge_messages`), no schema, at
temperature 0, and reads the answer as an integer: `1` means similar, any other integer means not. What happens to an
answer that is not an integer (or a call that fails) depends on the script:
- the chain script (`get_emo_score.py`) has no guard: the whole run stops. We fail that dialogue, naming the answer
  (`ReferenceCrash`);
- the sextuple script (`get_quadruples_score.py`) catches everything and counts 0.

Here all questions of a round go to the LLM in one `generate` call and answers are cached per question, so a
deterministic judge gives what the reference's one-by-one calls give.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from emocaustics.models.base import LLM, ChatRequest, Sampling
from emocaustics.tasks.longdialogue.score.prompts import reference_judge_messages

Question = tuple[str, str]  # (ground-truth text, predicted text), formatted as the reference formats them


class ReferenceCrash(Exception):
    """Where the reference script raises: the dialogue fails, and the message says where and why."""


@dataclass(frozen=True, slots=True)
class Answer:
    text: str | None  # the judge's answer (None when the call failed)
    error: str | None = None


def as_question_text(value: object) -> str:
    """The reference puts values into its user turn with an f-string: None reads "None", numbers their str()."""
    return f"{value}"


def answer_value(answer: Answer, where: str) -> int:
    """1 or 0 from an answer the way the chain script reads it; anything it cannot read raises `ReferenceCrash`."""
    if answer.error is not None or answer.text is None:
        raise ReferenceCrash(f"{where}: the judge call failed ({answer.error or 'no answer'}); the reference stops here")
    try:
        value = int(answer.text.strip())  # Python's own int(): the reference's reading, signs and spaces included
    except ValueError:
        raise ReferenceCrash(f"{where}: judge answer {answer.text[:80]!r} is not an integer; the reference's int() "
                             "raises here") from None
    return 1 if value == 1 else 0


def answer_value_or_zero(answer: Answer) -> int:
    """The sextuple script's reading: as `answer_value`, but a failure counts 0 instead of stopping."""
    try:
        return answer_value(answer, "")
    except ReferenceCrash:
        return 0


class ReferenceJudge:
    """Asks the reference's questions through any `LLM`; caches answers per (task, question)."""

    def __init__(self, llm: LLM) -> None:
        self.llm = llm
        self.name = llm.name
        self.sampling = Sampling(temperature=0.0, seed=None)
        self.cache: dict[tuple[str, Question], Answer] = {}
        self.asked = 0

    async def answers(self, task: str, questions: Iterable[Question]) -> dict[Question, Answer]:
        wanted = list(dict.fromkeys(questions))
        todo = [q for q in wanted if (task, q) not in self.cache]
        if todo:
            self.asked += len(todo)
            requests = [ChatRequest(messages=reference_judge_messages(task, a, b), sampling=self.sampling)
                        for a, b in todo]
            for q, c in zip(todo, await self.llm.generate(requests), strict=True):
                self.cache[(task, q)] = Answer(c.text if c.error is None else None, c.error)
        return {q: self.cache[(task, q)] for q in wanted}
