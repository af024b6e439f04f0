"""The litellm client reads an answer as every other client does (`models/jsonout.read_answer`): an unparseable
answer's error says "invalid JSON" once, and an answer cut at max_tokens names the limit. LiteLLM itself is stood in
for (importing it costs seconds): only `acompletion` and the exception types `_once` names are needed."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from emocaustics.models.base import ChatRequest, ErrorKind, Sampling

SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}}


def _stand_in(text: str, finish: str):
    async def acompletion(**kwargs):
        message = SimpleNamespace(content=text)
        return SimpleNamespace(choices=[SimpleNamespace(message=message, finish_reason=finish)],
                               usage=SimpleNamespace(prompt_tokens=3, completion_tokens=5))

    error = type("BadRequestError", (Exception,), {})
    return SimpleNamespace(acompletion=acompletion, BadRequestError=error)


def _ask(monkeypatch, text: str, finish: str = "stop"):
    from emocaustics.models import litellm_chat

    monkeypatch.setattr(litellm_chat, "_litellm", lambda: _stand_in(text, finish))
    llm = litellm_chat.LiteLLMChat("openai/m", None, name="litellm:openai/m", json_retries=0)
    request = ChatRequest(messages=({"role": "user", "content": "q"},), sampling=Sampling(max_tokens=40),
                          schema=SCHEMA)
    return asyncio.run(llm.generate([request]))[0]


def test_an_unparseable_answer_says_invalid_json_once(monkeypatch):
    c = _ask(monkeypatch, "no json here")
    assert c.kind is ErrorKind.ANSWER and c.error.startswith("invalid JSON: ") and c.error.count("invalid JSON") == 1


def test_an_answer_cut_at_max_tokens_names_the_limit_and_a_whole_one_stands(monkeypatch):
    cut = _ask(monkeypatch, '{"answer": "half', "length")
    assert cut.parsed is None and cut.error.startswith("answer cut at max_tokens=40"), cut.error
    whole = _ask(monkeypatch, '{"answer": "x"}')
    assert whole.error is None and whole.parsed == {"answer": "x"} and whole.generated_tokens == 5
