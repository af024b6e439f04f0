"""The reference scripts' way of driving an OpenAI-compatible server, rebuilt for a like-for-like comparison.

How they drive it: every LLM call is one blocking HTTP request; a pool of `--batch` threads, one dialogue per thread,
each working through its dialogue's calls one after another. `--batch` is the reference's own, per script, as its
authors run it (`REFERENCE_CONCURRENCY`: the README's run commands, else the script's argparse default).
The work is ours, so that only the driving differs: the same prompt templates, request bodies (messages, JSON schema,
sampling), parsing, retries and per-dialogue state machines (`extract_one`), with a backend whose `generate` blocks
on each request in turn instead of sending them concurrently.
"""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from emocaustics.models.base import ChatRequest, Completion
from emocaustics.models.jsonout import parse_answer

# Threads per method, as the reference (github.com/zRzRzRzRzRzRzR/EmoCaustics, README at 21abfc7, scripts at 7aa88ef)
# runs it. Every method has a documented figure; none is our choice.
REFERENCE_CONCURRENCY: dict[str, tuple[int, str]] = {
    "sextuple/direct": (16, "README: get_quadruples_only_llm.py ... --batch 16"),
    "sextuple/rag": (16, "README: get_quadruples_rag.py ... --batch 16"),
    "sextuple/window": (1, "README: get_quadruples_sw.py ... --batch 1"),
    "emotion/direct": (20, "get_emo_only_llm.py: argparse default --batch 20 (its README command gives none)"),
    "emotion/window": (4, "README: get_emo_sw.py ... --batch 4 --window_sizes 30 --step_sizes 10"),
}


class BlockingLLM:
    """An `LLM` whose `generate` makes one blocking `chat.completions.create` per request, in order."""

    def __init__(self, model: str, base_url: str, *, timeout: float = 120.0, max_retries: int = 4) -> None:
        import openai

        from emocaustics.models.openai_chat import NO_KEY, OpenAIChatLLM, api_key_from_env

        self.name = f"blocking-openai:{model}@{base_url}"
        self._bodies = OpenAIChatLLM(model, base_url)  # builds each request body exactly as our async client does
        self._client = openai.OpenAI(api_key=api_key_from_env() or NO_KEY, base_url=base_url, timeout=timeout,
                                     max_retries=max_retries)
        self._lock = threading.Lock()
        self.calls = 0
        self.seconds_in_calls = 0.0  # summed over threads: time spent blocked on HTTP

    def _call(self, request: ChatRequest) -> Completion:
        import openai

        t0 = time.perf_counter()
        try:
            resp = self._client.chat.completions.create(**self._bodies._body(request, request.schema is not None))
        except openai.OpenAIError as exc:
            return Completion(text="", error=f"{type(exc).__name__}: {str(exc)[:200]}")
        finally:
            with self._lock:
                self.calls += 1
                self.seconds_in_calls += time.perf_counter() - t0
        choice = resp.choices[0] if resp.choices else None
        text = (choice.message.content or "") if choice is not None else ""
        parsed, repaired, error = parse_answer(text, request.schema)
        usage = resp.usage
        return Completion(text=text, parsed=parsed, error=error, repaired=repaired,
                          prompt_tokens=usage.prompt_tokens if usage else 0,
                          generated_tokens=usage.completion_tokens if usage else 0)

    async def generate(self, requests: list[ChatRequest]) -> list[Completion]:
        # Deliberately blocking and sequential: this is the call pattern under comparison.
        return [self._call(r) for r in requests]

    def close(self) -> None:
        self._client.close()


def reference_threads(method: str) -> int:
    """The reference's own concurrency for `method` ("task/how", e.g. "emotion/window")."""
    if method not in REFERENCE_CONCURRENCY:
        raise ValueError(f"no documented reference concurrency for {method!r}; have {sorted(REFERENCE_CONCURRENCY)}")
    return REFERENCE_CONCURRENCY[method][0]


def run_reference_style(llm: BlockingLLM, items: list[dict[str, Any]], method: str) -> dict[str, Any]:
    """Run the items the reference's way (`method` = "task/how"); returns rows (as `extract_one` makes them), wall
    seconds and the thread count used."""
    from emocaustics.tasks.emocaustics.extract.runner import extract_one

    threads = reference_threads(method)

    def one(item: dict[str, Any]) -> dict[str, Any]:
        return asyncio.run(extract_one(llm, item))

    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=threads) as ex:
        rows = list(ex.map(one, items))
    return {"rows": rows, "seconds": time.perf_counter() - t0, "threads": threads}
