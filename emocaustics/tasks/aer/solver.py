"""Asking a model one AER question: schema-guided answer, strict text fallback, one retry, self-consistency vote.

- The answer is a non-empty set of letters A-D (`Answer`), with a bounded `reasoning` string first under cot
  (`CotAnswer`). Backends with structured output get the schema; an answer is read from the backend's parsed JSON,
  else the text as JSON (a ```json fence allowed), else strictly from a line `Answer: A, C` (the last such line) or a
  text that is nothing but letters. Anything else is unreadable.
- An unreadable answer or a model error is asked once more (a new seed, temperature >= 0.7, so that a greedy answer
  that failed is not simply repeated or served from the response cache); after that the question is a counted
  failure (`SolveFailed`, whose reason carries the raw output). A prompt over the model's context fails at once.
- Self-consistency (`samples: n`): n requests with seeds seed..seed+n-1 at `temperature` (> 0 for n > 1); each option
  is chosen when more than half of the samples that could be read chose it (an unreadable sample has no vote). When no
  option reaches a majority, the most frequent answer set is taken (ties: the earliest sample), so that the answer is
  never empty; `vote_fallback` records it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, Field, ValidationError

from emocaustics.core.task import SolveFailed
from emocaustics.evallog.record import note
from emocaustics.models.base import ChatRequest, Completion, ErrorKind, Sampling
from emocaustics.solve.schema import schema_of, token_budget
from emocaustics.tasks.aer.prompts import PROMPT_MODES, REASONING_MAX_CHARS

Letter = Literal["A", "B", "C", "D"]
Letters = Annotated[list[Letter], AfterValidator(lambda v: sorted(set(v))), Field(min_length=1, max_length=4)]
RAW_KEEP = 2000  # characters of a raw output kept in a failure reason


class Answer(BaseModel):
    answer: Letters


class CotAnswer(BaseModel):
    # The bound is in the schema (guided decoding stops there); a longer text from an unguided backend is still read.
    reasoning: str = Field(json_schema_extra={"maxLength": REASONING_MAX_CHARS})
    answer: Letters


def answer_model(prompt: str) -> type[Answer] | type[CotAnswer]:
    return CotAnswer if prompt == "cot" else Answer


# The answer's schema and its bound (max_tokens of one answer) are constants of the prompt mode, built once here where
# the answer is defined: a run's requests share one schema object, and prepare sizes the documents by the bound.
ANSWER_SCHEMAS = {prompt: schema_of(answer_model(prompt)) for prompt in PROMPT_MODES}
ANSWER_BUDGETS = {prompt: token_budget(schema) for prompt, schema in ANSWER_SCHEMAS.items()}


class Unreadable(Exception):
    pass


_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)
_ANSWER_LINE = re.compile(r"^\W*(?:final\s+)?answers?\W*[:：]\s*(.+?)\s*$", re.IGNORECASE)
_LETTERS_ONLY = re.compile(r"^\s*\[?\s*([A-D](?:\s*(?:,|and|&|\s)\s*[A-D])*)\s*\]?\s*\.?\s*$")


def _letters(text: str) -> list[str] | None:
    m = _LETTERS_ONLY.match(re.sub(r"[\"'`*]", "", text))  # quotes and markdown emphasis around the letters
    return sorted(set(re.findall(r"[A-D]", m.group(1)))) if m else None


def read_answer(c: Completion, prompt: str) -> tuple[list[str], str, str]:
    """(letters, reasoning, how) from a completion; raises Unreadable naming what was wrong."""
    model = answer_model(prompt)
    obj = c.parsed
    how = "schema"
    if obj is None:
        text = c.text.strip()
        fenced = _FENCE.match(text)
        try:
            obj, how = json.loads(fenced.group(1) if fenced else text), "json"
        except json.JSONDecodeError:
            obj = None
    if obj is not None:
        try:
            rec = model.model_validate(obj)
        except ValidationError as exc:
            first = exc.errors()[0]
            raise Unreadable(f"field {'.'.join(map(str, first['loc'])) or '(root)'}: {first['msg']}") from None
        return list(rec.answer), getattr(rec, "reasoning", ""), how
    lines = [ln for ln in c.text.strip().splitlines() if ln.strip()]
    for line in reversed(lines):
        m = _ANSWER_LINE.match(line)
        if m:
            letters = _letters(m.group(1))
            if letters:
                return letters, "\n".join(lines[:-1]) if prompt == "cot" else "", "text"
            raise Unreadable(f"answer line without letters A-D: {line.strip()[:80]!r}")
    if len(lines) == 1 and (letters := _letters(lines[0])):
        return letters, "", "text"
    raise Unreadable(f"no JSON answer and no 'Answer: ...' line (starts {c.text.strip()[:80]!r})")


@dataclass
class Attempt:
    letters: list[str] | None
    reasoning: str
    raw: str
    how: str = ""
    reason: str = ""


async def ask_samples(llm: Any, messages: tuple[dict[str, str], ...], prompt: str, *, samples: int,
                      temperature: float, seed: int, affinity: str | None) -> list[Attempt]:
    """`samples` answers (each retried once); raises SolveFailed when none could be read."""
    schema, budget = ANSWER_SCHEMAS[prompt], ANSWER_BUDGETS[prompt]
    temp = temperature if samples > 1 else 0.0
    results: list[Attempt | None] = [None] * samples  # a failed one holds its raw output and reason until re-asked
    pending = list(range(samples))
    for attempt in range(2):
        if not pending:
            break
        # a re-ask: a new seed, temperature >= 0.7 (see the module docstring), live under `batch: true`
        sampling = [Sampling(max_tokens=budget, temperature=temp if attempt == 0 else max(temp, 0.7),
                             seed=seed + i + 1000 * attempt) for i in pending]
        requests = [ChatRequest(messages=messages, schema=schema, sampling=sp,
                                affinity=affinity, live=attempt > 0) for sp in sampling]
        completions = await llm.generate(requests)
        if len(completions) != len(requests):
            raise SolveFailed("answer", f"backend returned {len(completions)} answers for {len(requests)} requests")
        still = []
        for i, c, request in zip(pending, completions, requests):
            note(request, step="answer", attempt=attempt)  # the eval log's record of this call
            if c.kind is ErrorKind.CONTEXT_LENGTH:
                raise SolveFailed("answer", f"prompt exceeds the model's context: {c.error}")
            if c.error is not None and not (c.error.startswith("invalid JSON") and c.text.strip()):
                results[i] = Attempt(None, "", c.text, reason=f"model error: {c.error}")
                still.append(i)
                continue
            try:
                # a backend without structured output may answer in prose: its text is still read strictly
                letters, reasoning, how = read_answer(c if c.error is None else Completion(text=c.text), prompt)
            except Unreadable as exc:
                results[i] = Attempt(None, "", c.text, reason=f"unreadable answer: {exc}")
                note(request, step="answer", attempt=attempt, parse_error=str(exc))
                still.append(i)
                continue
            results[i] = Attempt(letters, reasoning[:REASONING_MAX_CHARS * 2], c.text, how)
        pending = still
    done = [r for r in results if r is not None]
    if all(r.letters is None for r in done):
        r = done[0]
        raise SolveFailed("answer", f"{r.reason} (after 2 attempts{f', all {samples} samples' if samples > 1 else ''}); "
                                    f"raw output: {r.raw[:RAW_KEEP]!r}")
    return done

