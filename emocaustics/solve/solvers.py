"""Reusable solvers: what a task that asks a model one question per sample plugs in instead of writing its own.

A solver is a small object: `async solve(llm, sample) -> prediction` (raises `SolveFailed` naming step and reason),
plus `prompt_text` (the template, hashed into the task's prompts version) and `answer_models` (checked when the task
registers, `core/answers.py`). Both ask through `solve.ask.Asker`: schema-guided, re-asked on a new seed when an
answer does not parse, every call noted in the eval log.

- `Generate(answer, prompt)`: the prompt template filled with the sample's fields, the answer constrained to the
  pydantic model `answer`; the prediction is the answer as a dict (or one of its fields, `field=`).
- `MultipleChoice(prompt, choices=...)`: the sample's choices shown as `A. ...`, `B. ...`, the answer constrained to
  those letters; `n` answers (seeds seed..seed+n-1 at `temperature`; n = 1 is greedy) voted by majority. Tie rule: of
  the letters with the most votes, the one the earliest sample gave wins. The prediction is
  `{"answer": letter, "choice": its text, "index": its 0-based position, "votes": {letter: count}}`.

Templates use Python's `str.format` fields: `{question}` is the sample's input field `question`, `{id}` its id; the
multiple-choice template also gets `{choices}` (the lettered list). `template_fields` names the fields a template
needs, so a loader can check them against its columns before anything runs.
"""

from __future__ import annotations

import string
from collections import Counter
from functools import lru_cache
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, create_model

from emocaustics.core.task import Sample, SolveFailed
from emocaustics.models.base import Sampling
from emocaustics.solve.ask import Ask, Asker
from emocaustics.solve.schema import schema_of, token_budget

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def template_fields(template: str) -> list[str]:
    """The field names a template uses, in order (`{a} {b.c}` -> a, b)."""
    names = [f for _, f, _, _ in string.Formatter().parse(template) if f is not None]
    return list(dict.fromkeys(f.split(".")[0].split("[")[0] for f in names if f))


def fill(template: str, sample: Sample, **extra: Any) -> str:
    """The template with the sample's input fields (and `id`, and `extra`); a missing field is a `SolveFailed`."""
    fields = dict(sample.input) if isinstance(sample.input, dict) else {"input": sample.input}
    try:
        return template.format_map({**fields, "id": sample.id, **extra})
    except (KeyError, IndexError, AttributeError) as exc:
        raise SolveFailed("prompt", f"template field {exc} is not a field of sample {sample.id} "
                                    f"(its fields: {', '.join(sorted(fields))})") from None


class Generate:
    """One schema-constrained answer per sample (see the module docstring)."""

    def __init__(self, answer: type[BaseModel], prompt: str, *, system: str | None = None,
                 field: str | None = None) -> None:
        self.answer, self.prompt, self.system, self.field = answer, prompt, system, field
        self.answer_models = (answer,)
        self.prompt_text = f"{system or ''}\n{prompt}"
        if field is not None and field not in answer.model_fields:
            raise ValueError(f"answer model {answer.__name__} has no field {field!r}")

    async def solve(self, llm: Any, sample: Sample) -> Any:
        asker = Asker(llm, system=self.system, affinity=sample.id)
        got = await asker.ask(Ask("generate", fill(self.prompt, sample), self.answer, schema_of(self.answer)))
        data = got.model_dump(mode="json")
        return data[self.field] if self.field else data


@lru_cache(maxsize=None)
def choice_model(k: int) -> type[BaseModel]:
    """The answer model of a question with `k` choices: one letter of the first k."""
    letters = tuple(LETTERS[:k])
    return create_model(f"Choice{k}", __config__=ConfigDict(extra="forbid"), answer=(Literal[letters], ...))


def majority(answers: list[str]) -> tuple[str, dict[str, int]]:
    """(winner, votes): the most frequent answer; ties go to the tied answer the earliest sample gave."""
    votes = Counter(answers)  # most_common orders equal counts as first met: the tie goes to the earliest sample's
    return votes.most_common(1)[0][0], dict(sorted(votes.items()))


class MultipleChoice:
    """Multiple choice with self-consistency (see the module docstring)."""

    def __init__(self, prompt: str, *, choices: str = "choices", n: int = 1, temperature: float = 0.7,
                 seed: int = 0, system: str | None = None) -> None:
        if n < 1:
            raise ValueError(f"n must be at least 1, not {n}")
        if n > 1 and temperature <= 0:
            raise ValueError("self-consistency (n > 1) needs a temperature above 0: greedy answers are all the same")
        self.prompt, self.choices, self.n, self.temperature, self.seed = prompt, choices, n, temperature, seed
        self.system = system
        self.answer_models = ()  # one per number of choices, made as needed: letters only, always bounded
        self.prompt_text = f"{system or ''}\n{prompt}\nn={n} temperature={temperature} seed={seed}"

    def options_of(self, sample: Sample) -> list[str]:
        got = sample.input.get(self.choices) if isinstance(sample.input, dict) else None
        if not isinstance(got, (list, tuple)) or not 2 <= len(got) <= len(LETTERS):
            raise SolveFailed("prompt", f"sample {sample.id}: field {self.choices!r} must be a list of 2 to "
                                        f"{len(LETTERS)} choices, not {got!r}")
        return [str(c) for c in got]

    async def solve(self, llm: Any, sample: Sample) -> dict[str, Any]:
        options = self.options_of(sample)
        shown = "\n".join(f"{LETTERS[i]}. {c}" for i, c in enumerate(options))
        user = fill(self.prompt, sample, choices=shown)
        model = choice_model(len(options))
        schema = schema_of(model)
        budget = token_budget(schema)
        temperature = self.temperature if self.n > 1 else 0.0
        asks = [Ask(f"choice {i + 1}/{self.n}", user, model, schema,
                    sampling=Sampling(max_tokens=budget, temperature=temperature, seed=self.seed + i))
                for i in range(self.n)]
        answers = [a.answer for a in await Asker(llm, system=self.system, affinity=sample.id).ask_many(asks)]
        winner, votes = majority(answers)
        index = LETTERS.index(winner)
        return {"answer": winner, "choice": options[index], "index": index, "votes": votes}
