"""The reference scripts' way of driving an OpenAI-compatible server, rebuilt for a like-for-like comparison.

As a whole process, the way the reference scripts run (`benchmarks/race_bench.py` times it from start to exit):

    python -m benchmarks.refdriver --method sextuple/rag --ids 1,2,3 --url http://HOST:PORT/v1 --out DIR
        [--model NAME] [--from SEXTUPLE_WINDOW_DIR] [--data DIR] [--embedder minilm]

loads the dialogues, loads the embedder in this process when the method needs embeddings (the reference scripts
load their sentence-transformers model in-process), embeds up front, drives the calls with the reference's threads,
writes each dialogue's prediction file as it finishes (our file names and formats) and prints a JSON summary.

How they drive it: every LLM call is one blocking HTTP request; a pool of `--batch` threads, one dialogue per thread,
each working through its dialogue's calls one after another. `--batch` is the reference's own, per script, as its
authors run it (`REFERENCE_CONCURRENCY`: the README's run commands, else the script's argparse default).
The work is ours, so that only the driving differs: the same prompt templates, request bodies (messages, JSON schema,
sampling), parsing, retries and per-dialogue state machines (`extract_one`), with a backend whose `generate` blocks
on each request in turn instead of sending them concurrently.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
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

        from emocaustics.models.openai_chat import OpenAIChatLLM

        self.name = f"blocking-openai:{model}@{base_url}"
        self._bodies = OpenAIChatLLM(model, base_url)  # builds each request body exactly as our async client does
        self._client = openai.OpenAI(api_key=self._bodies.api_key(), base_url=base_url, timeout=timeout,
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
    """The dialogues as the task's work items (`DialogueSide.solver_view`, the prior sextuple run of `from_dir`
    for a chain `window` config, as our run reads it), and the reference's embedding: every utterance of the items
    that use embeddings in one batched call, up front; returns the items and the seconds that call took. An item
    whose prior is missing carries `skip_reason` (ours fails it at step `input`, without calls)."""
    from emocaustics.core.task import Failure, Sample, get_task
    from emocaustics.tasks.longdialogue.embeddings import pack
    from emocaustics.tasks.longdialogue.task import EmoOptions

    task_name, how = method.split("/")
    task, options = get_task(task_name), EmoOptions(method=how)
    samples = [Sample(str(d.id), d) for d in dialogues]
    priors = task.side.read_prior(from_dir, samples) if from_dir is not None else {}
    items = []
    for s in samples:
        prior = priors.get(s.id)
        item = task.side.solver_view(s, options, None if isinstance(prior, Failure) else prior).input
        if isinstance(prior, Failure):
            item["skip_reason"] = prior.reason
        elif task.side.side_texts(Sample(s.id, item), options):
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


async def extract_one(llm: Any, item: dict[str, Any]) -> dict[str, Any]:
    """One item outside the plan (the reference's driving here; the benchmarks that drive a pool directly): a row with
    the prediction or the failure, its cost and seconds. Embeddings come packed with the item (`emb`, `make_item`)."""
    from emocaustics.core.task import SolveFailed
    from emocaustics.solve.item import CountingLLM
    from emocaustics.tasks.longdialogue.embeddings import Embeddings, unpack
    from emocaustics.tasks.longdialogue.extract.dialogue import solve_dialogue

    emb = None if item.get("emb") is None else Embeddings(unpack(item["emb"]))
    t0 = time.perf_counter()
    row: dict[str, Any] = {"dialogue": int(item["id"]), "utterances": len(item["sentences"]), "ok": False,
                           "prediction": None, "step": None, "reason": None}
    stats: dict[str, Any] = {}
    counted = CountingLLM(llm)  # its calls, as the plan counts them
    try:
        row["prediction"] = await solve_dialogue(counted, item, emb, stats)
        row["ok"] = True
    except SolveFailed as exc:
        row["step"], row["reason"] = exc.step, exc.reason
    row["retry_reasons"] = stats.pop("retry_reasons", [])
    row["stats"] = {**counted.counts, **stats}
    row["seconds"] = round(time.perf_counter() - t0, 3)
    return row


def run_reference_style(llm: BlockingLLM, items: list[dict[str, Any]], method: str,
                        on_row: Any = None) -> dict[str, Any]:
    """Run the items the reference's way (`method` = "task/how"); returns rows (as `extract_one` makes them), wall
    seconds and the thread count used. An item with `skip_reason` gets its failure row without a call. `on_row(row)`
    runs in the item's thread as soon as its dialogue is done (the reference scripts write each output file there)."""
    threads = reference_threads(method)

    def one(item: dict[str, Any]) -> dict[str, Any]:
        if item.get("skip_reason"):
            row = {"dialogue": int(item["id"]), "utterances": len(item["sentences"]), "ok": False,
                   "prediction": None, "step": "input", "reason": item["skip_reason"], "stats": {}, "seconds": 0.0}
        else:
            row = asyncio.run(extract_one(llm, item))
        if on_row is not None:
            on_row(row)
        return row

    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=threads) as ex:
        rows = list(ex.map(one, items))
    return {"rows": rows, "seconds": time.perf_counter() - t0, "threads": threads}


def main(argv: list[str] | None = None) -> int:
    marks = {"start": time.time()}  # epoch seconds; the process's own start is the caller's clock
    ap = argparse.ArgumentParser(prog="python -m benchmarks.refdriver", description=__doc__.splitlines()[0])
    ap.add_argument("--method", required=True, choices=sorted(REFERENCE_CONCURRENCY))
    ap.add_argument("--ids", required=True, help="dialogue ids, e.g. 1,2,3")
    ap.add_argument("--url", required=True, help="the OpenAI-compatible base URL (.../v1)")
    ap.add_argument("--model", default="standin")
    ap.add_argument("--out", required=True)
    ap.add_argument("--from", dest="from_dir", help="emotion/window: the sextuple window run to build on")
    ap.add_argument("--data", help="dataset folder (default: $EMOCAUSTICS_DATA)")
    ap.add_argument("--embedder", default="minilm")
    args = ap.parse_args(argv)
    from emocaustics.models.embedders import make_embedder
    from emocaustics.tasks.longdialogue.data.subsets import resolve
    from emocaustics.tasks.longdialogue.extract.output import append_failure, write_prediction

    dialogues, _ = resolve("all", [int(x) for x in args.ids.split(",") if x.strip()], root=args.data)
    marks["data_loaded"] = time.time()
    embedder = make_embedder(args.embedder)  # loads on its first use: only a method that embeds pays for it
    items, emb_s = reference_items(dialogues, args.method, Path(args.from_dir) if args.from_dir else None, embedder)
    marks["embedded"] = time.time()
    llm = BlockingLLM(args.model, args.url)
    out, task = Path(args.out), args.method.split("/")[0]
    out.mkdir(parents=True, exist_ok=True)
    lock = threading.Lock()

    def write(row: dict[str, Any]) -> None:
        if row["ok"]:
            write_prediction(out, task, row["dialogue"], row["prediction"])
        else:
            with lock:
                append_failure(out, {k: row[k] for k in ("dialogue", "step", "reason")})

    marks["calls_start"] = time.time()
    res = run_reference_style(llm, items, args.method, on_row=write)
    marks["calls_done"] = time.time()
    llm.close()
    rows = res["rows"]
    print(json.dumps({"method": args.method, "dialogues": len(rows), "predicted": sum(1 for r in rows if r["ok"]),
                      "failures": [{k: r[k] for k in ("dialogue", "step", "reason")} for r in rows if not r["ok"]],
                      "llm_calls": llm.calls, "threads": res["threads"], "embedding_s": round(emb_s, 3),
                      "texts_embedded": getattr(embedder, "texts_embedded", None), "timings": marks}))
    return 0 if rows and any(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
