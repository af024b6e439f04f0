"""The trim budget's parts, each decided in one place: the answer's bound by the solver (a constant of the prompt mode,
the same number the requests send as max_tokens), the rest of the prompt by prompts.py (the user message with a
one-token stand-in for the documents, so the block's frame is counted where the prompt is built)."""

from __future__ import annotations

import math

import pytest

from emocaustics.core.task import get_task, parse_options
from emocaustics.solve.schema import schema_of, token_budget
from emocaustics.tasks.aer import prompts
from emocaustics.tasks.aer.context import approx_tokens
from emocaustics.tasks.aer.context import MARGIN, prepare_samples
from emocaustics.tasks.aer.solver import ANSWER_BUDGETS, ANSWER_SCHEMAS, answer_model
from tasks.aer.aer_fixtures import standard_dataset


@pytest.mark.parametrize("prompt", prompts.PROMPT_MODES)
def test_answer_bound_is_the_schema_bound(prompt: str) -> None:
    assert ANSWER_SCHEMAS[prompt] == schema_of(answer_model(prompt))
    assert ANSWER_BUDGETS[prompt] == token_budget(schema_of(answer_model(prompt)))


@pytest.mark.parametrize("kind", ["none", "full", "retrieve"])
def test_rest_of_prompt_is_the_prompt_less_the_documents(kind: str) -> None:
    question = dict(topic="Harbour strike", shots=[], target_event="The port closed.",
                    options={"A": "Workers struck.", "B": "Rain fell.", "C": "None.", "D": "Ships left."},
                    prompt="cot")
    docs = "[Document 1] Strike\nDock workers walked out on Monday after talks failed."
    whole = prompts.SYSTEM + "\n" + prompts.user_message(context=docs, context_kind=kind, **question)
    rest = approx_tokens(prompts.rest_of_prompt(context_kind=kind, **question))
    # the stand-in counts one token; without documents (`none`) the prompt is all rest
    assert rest == (approx_tokens(whole) if kind == "none" else approx_tokens(whole) - approx_tokens(docs) + 1)


def test_full_context_budget_is_room_less_the_worst_rest(tmp_path) -> None:  # noqa: ANN001
    task = get_task("aer")
    opts = parse_options(task, {"method": "llm", "prompt": "zero-shot", "context": "full",
                                "max_context_tokens": 4096})
    samples = task.load(task.Dataset(split="sample", data=str(standard_dataset(tmp_path))), opts).samples
    prepared = prepare_samples(samples, opts)
    room = 4096 - ANSWER_BUDGETS["zero-shot"] - math.ceil(MARGIN * 4096)
    for s in prepared:
        same_topic = [p for p in prepared if p.input["topic_id"] == s.input["topic_id"]]
        worst = max(p.meta["prompt_tokens_est"] - p.meta["trim"]["tokens_kept"] for p in same_topic)
        assert s.meta["trim"]["budget"] == room - worst
