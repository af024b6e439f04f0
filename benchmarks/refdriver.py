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
from pathlib import Path
from typing import Any

import numpy as np

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


def reference_items(dialogues: list[Any], method: str, from_dir: Path | None, embedder: Any) -> tuple[list, float]:
    """The dialogues as the task's work items (`EmoCausticsTask.solver_view`, the prior sextuple run of `from_dir`
    for a chain `window` config, as our run reads it), and the reference's embedding: every utterance of the items
    that use embeddings in one batched call, up front; returns the items and the seconds that call took. An item
    whose prior is missing carries `skip_reason` (ours fails it at step `input`, without calls)."""
    from emocaustics.core.task import Failure, Sample, get_task
    from emocaustics.solve.side import pack
    from emocaustics.tasks.emocaustics.task import EmoOptions

    task_name, how = method.split("/")
    task, options = get_task(task_name), EmoOptions(method=how)
    samples = [Sample(str(d.id), d) for d in dialogues]
    priors = task.read_prior(from_dir, samples) if from_dir is not None else {}
    items = []
    for s in samples:
        prior = priors.get(s.id)
        item = task.solver_view(s, options, None if isinstance(prior, Failure) else prior).input
        if isinstance(prior, Failure):
            item["skip_reason"] = prior.reason
        elif task.side_texts(Sample(s.id, item), options):
            item["needs_emb"] = True
        items.append(item)
    todo = [it for it in items if it.get("needs_emb")]
    t0 = time.perf_counter()
    texts = [t for it in todo for t in it["sentences"]]
    if texts:
        vecs = np.asarray(asyncio.run(embedder.embed(texts)), dtype=np.float32)
        at = 0
        for it in todo:
            it["emb"] = pack(vecs[at:at + len(it["sentences"])])
            at += len(it["sentences"])
    return items, time.perf_counter() - t0


def run_reference_style(llm: BlockingLLM, items: list[dict[str, Any]], method: str) -> dict[str, Any]:
    """Run the items the reference's way (`method` = "task/how"); returns rows (as `extract_one` makes them), wall
    seconds and the thread count used. An item with `skip_reason` gets its failure row without a call."""
    from emocaustics.tasks.emocaustics.extract.dialogue import extract_one

    threads = reference_threads(method)

    def one(item: dict[str, Any]) -> dict[str, Any]:
        if item.get("skip_reason"):
            return {"dialogue": int(item["id"]), "utterances": len(item["sentences"]), "ok": False,
                    "prediction": None, "step": "input", "reason": item["skip_reason"], "stats": {}, "seconds": 0.0}
        return asyncio.run(extract_one(llm, item))

    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=threads) as ex:
        rows = list(ex.map(one, items))
    return {"rows": rows, "seconds": time.perf_counter() - t0, "threads": threads}
