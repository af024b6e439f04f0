"""The judge's prompt: the instructions and the round's criteria first (the prefix every conversation shares, so that
the engine's prefix cache serves it), then the conversation. The statements are those the workers rated their
agreement with (Ji et al., ACL 2022, the free-topic rounds), 0 = strongly disagree, 100 = strongly agree; a criterion
of another round without a statement here is shown by its name."""

from __future__ import annotations

import hashlib
from functools import lru_cache
from typing import Any

from pydantic import BaseModel, Field, create_model

STATEMENTS = {
    "robotic": "It was obvious that the user was talking to a chatbot as opposed to another human.",
    "interesting": "The conversation was interesting.",
    "fun": "The conversation was fun / enjoyable.",
    "consistent": "The chatbot was consistent throughout the conversation.",
    "fluent": "The chatbot's English was fluent and natural throughout the conversation.",
    "repetitive": "The chatbot kept repeating itself during the conversation.",
    "topic": "The chatbot stayed on topic.",
}
SYSTEM = ("You assess open-domain chatbots as a crowd worker does. You read one conversation between a human user and "
          "a chatbot, then rate how far you agree with each statement below, from 0 (strongly disagree) to 100 "
          "(strongly agree), using the whole scale. Rate the chatbot only, not the user.\n\nStatements:\n{criteria}\n\n"
          "Answer with one rating per statement and, optionally, a one-line reason.")
TURN = "User: {user}\nChatbot: {bot}"
USER = "Topic: {topic}\n\nConversation:\n{turns}"
REASON_CHARS = 200
PROMPTS_VERSION = hashlib.sha256("\x00".join((SYSTEM, TURN, USER, *STATEMENTS.values())).encode()).hexdigest()[:12]


def system_prompt(names: tuple[str, ...]) -> str:
    return SYSTEM.format(criteria="\n".join(f"- {n}: {STATEMENTS.get(n, n)}" for n in names))


def user_message(conversation: dict[str, Any]) -> str:
    turns = "\n".join(TURN.format(user=t.get("user", ""), bot=t.get("bot", "")) for t in conversation["turns"])
    return USER.format(topic=conversation.get("topic") or "(free topic)", turns=turns)


@lru_cache(maxsize=8)
def answer_model(names: tuple[str, ...]) -> type[BaseModel]:
    """The answer: one integer 0-100 per criterion (in the round's order), then an optional short reason."""
    fields: dict[str, Any] = {n: (int, Field(ge=0, le=100)) for n in names}
    return create_model("JudgeRatings", **fields, reason=(str, Field("", max_length=REASON_CHARS)))
