"""The LLM judge of both scoring modes: batched, cached, failures counted (never hidden); its rules are a policy.

Any `emocaustics.models.base.LLM` can judge: `openai:MODEL@URL`, `vllm:...`, `smoke` resolve through
`emocaustics.models.factory.make_llm` (imported lazily: the vLLM path lives in the model-hosting package and plugs in
without changes here). All questions of a scoring round go to the LLM in one `generate` call, so a vLLM engine can
batch them; answers are cached per (task, question) for the life of the judge (and on disk when the LLM is built
with a cache directory). What differs between the modes is a `JudgeRules`:
- `SPEC_JUDGE` (the spec): our prompt with a JSON schema, 16 tokens, read as 0/1 (`parse_verdict`); an answer that
  is not 0/1 is asked once more with a stricter note, then counted as a failure (None);
- `REFERENCE_JUDGE` (`--compat reference`): the published scripts' prompt per task
  (`prompts.reference_judge_messages`), no schema, temperature 0, one call per question and no retry; the answer is
  kept raw (`Answer`) and read as an integer by the script's own rules: `1` means similar, any other integer means
  not. An answer that is not an integer (or a failed call) stops the chain script (`get_emo_score.py` has no guard:
  we fail that dialogue, naming the answer, `ReferenceCrash`) and counts 0 in the sextuple script
  (`get_quadruples_score.py` catches everything). Asked in batches and cached, a deterministic judge gives what the
  reference's one-by-one calls give.
In a job the judge's calls go to the eval log of the config being scored (`evallog.sink.current()`), each dialogue
with the calls of the questions its scoring read (`Judge.logged`): asked once, a question shared by two dialogues is
in both logs. Scoring on Ray (`plan.score_with_ray`): the actor's judge logs to a `sink.Kept`, whose lines the driver
emits to the config's log.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from emocaustics.evallog.record import JUDGE, Recorder
from emocaustics.evallog.sink import current
from emocaustics.models.base import LLM, ChatRequest, Completion, Sampling
from emocaustics.tasks.longdialogue.score.prompts import JUDGE_SCHEMA, judge_messages, reference_judge_messages

Pair = tuple[str, str]
Question = tuple[str, str]  # (ground-truth text, predicted text), formatted as the reference formats them


class ReferenceCrash(Exception):
    """Where the reference script raises: the dialogue fails, and the message says where and why."""


@dataclass(frozen=True, slots=True)
class Answer:
    text: str | None  # the judge's answer (None when the call failed)
    error: str | None = None


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


def answer_value_or_none(answer: Answer) -> int | None:
    """As `answer_value`, but None where the chain script stops: the sextuple script counts it 0, and the reference
    policy counts it as a judge failure."""
    try:
        return answer_value(answer, "")
    except ReferenceCrash:
        return None


@dataclass(frozen=True, slots=True)
class JudgeRules:
    """How a mode asks its judge and reads the answers (see the module's docstring)."""

    messages: Callable[[str, str, str, bool], tuple[dict[str, str], ...]]  # (task, gt, pred, retry)
    read: Callable[[Completion], Any]  # None: unreadable, asked again once when `retry`
    schema: dict[str, Any] | None
    sampling: Sampling
    retry: bool


SPEC_JUDGE = JudgeRules(lambda task, gt, pred, retry: judge_messages(gt, pred, retry), parse_verdict, JUDGE_SCHEMA,
                        Sampling(max_tokens=16, temperature=0.0), retry=True)
REFERENCE_JUDGE = JudgeRules(lambda task, a, b, retry: reference_judge_messages(task, a, b),
                             lambda c: Answer(c.text if c.error is None else None, c.error), None,
                             Sampling(temperature=0.0, seed=None), retry=False)


@dataclass(slots=True)
class JudgeStats:
    asked: int = 0  # distinct questions sent to the LLM
    retried: int = 0
    failures: int = 0  # still unreadable after the retry
    cache_hits: int = 0


class Judge:
    def __init__(self, llm: LLM, rules: JudgeRules = SPEC_JUDGE) -> None:
        self.llm = llm
        self.name = llm.name
        self.rules = rules
        self.cache: dict[tuple[str, Pair], Any] = {}
        self.stats = JudgeStats()
        self.log = current()  # the eval log of the config being scored (a job's), else None: no call is kept
        self._t0 = time.perf_counter()
        self._calls: dict[tuple[str, Pair], list[tuple[Any, ...]]] = {}  # (request, answer, start, latency, retry)
        self._read: dict[str, dict[tuple[str, Pair], None]] = {}  # sample -> the questions its scoring read

    async def _ask(self, task: str, pairs: list[Pair], retry: bool) -> list[Any]:
        r = self.rules
        requests = [ChatRequest(messages=r.messages(task, g, p, retry), schema=r.schema, sampling=r.sampling)
                    for g, p in pairs]
        t0 = time.perf_counter()
        answers = await self.llm.generate(requests)
        # strict: an LLM that answers fewer requests than asked breaks its contract; nothing of the round is cached
        read = [r.read(c) for _, c in zip(pairs, answers, strict=True)]
        if self.log is not None:  # a batch's requests run together: each took the batch's time
            for p, request, c in zip(pairs, requests, answers):
                self._calls.setdefault((task, p), []).append((request, c, t0, time.perf_counter() - t0, int(retry)))
        return read

    async def ask(self, pairs: Iterable[Pair], task: str = "emotion") -> dict[Pair, Any]:
        """Each distinct (gt, pred) question's reading under `task`, asked once per judge."""
        wanted = list(dict.fromkeys(pairs))
        todo = [p for p in wanted if (task, p) not in self.cache]
        self.stats.cache_hits += len(wanted) - len(todo)
        if todo:
            self.stats.asked += len(todo)
            verdicts = dict(zip(todo, await self._ask(task, todo, retry=False)))
            again = [p for p in todo if verdicts[p] is None] if self.rules.retry else []
            if again:
                self.stats.retried += len(again)
                for p, v in zip(again, await self._ask(task, again, retry=True)):
                    verdicts[p] = v
                    self.stats.failures += v is None
            self.cache.update({(task, p): v for p, v in verdicts.items()})
        return {p: self.cache[(task, p)] for p in wanted}

    def reads(self, answers: Mapping[Any, Any] | None, dialogue: Any, task: str) -> Mapping[Any, Any] | None:
        """The answers as a dialogue's scoring reads them: with an eval log, a view that keeps the questions it reads,
        whose calls `emit` logs once the dialogue is scored (its rows made) or failed."""
        if self.log is None or answers is None:
            return answers
        return _Reads(answers, self._read.setdefault(str(dialogue.id), {}), task)

    def emit(self, sample_id: str) -> None:
        """The calls of the questions the sample's scoring read, in the order asked, to the eval log (one line)."""
        calls = sorted((c for q in self._read.pop(sample_id, {}) for c in self._calls.get(q, ())), key=lambda c: c[2])
        if self.log is None or not calls:
            return
        rec = Recorder(self.log.prompts, t0=self._t0)
        for request, answer, started, latency, retry in calls:
            rec.add(request, answer, started, latency)
            rec.note(request, step=JUDGE, attempt=retry)
        self.log.emit(sample_id, {"ok": True, "step": JUDGE, "log": rec.finished(),
                                  "stats": {"model": self.name, "seconds": round(time.perf_counter() - self._t0, 3)}})


class _Reads(Mapping):
    """A dialogue's view of the judge's answers: the questions it reads (or asks whether answered) are kept, for
    `Judge.emit` to log their calls."""

    def __init__(self, answers: Mapping[Any, Any], read: dict[Any, None], task: str) -> None:
        self.answers, self.read, self.task = answers, read, task

    def __getitem__(self, q: Any) -> Any:
        value = self.answers[q]
        self.read[(self.task, q)] = None
        return value

    def __iter__(self) -> Iterator[Any]:
        return iter(self.answers)

    def __len__(self) -> int:
        return len(self.answers)
