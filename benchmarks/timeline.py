"""Where the time goes: figures computed from the engine tap's per-request records (see `enginetap.py`).

Pure functions over records `{"submit", "first", "finish", "prompt_ids", "generated", "cached", "schema", "task"}`
(times in wall-clock seconds), so that they are tested without an engine.
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any, Iterable


def union_seconds(intervals: Iterable[tuple[float, float]]) -> float:
    """Length of the union of [start, end] intervals: the time at least one of them was open."""
    total = 0.0
    cur_start: float | None = None
    cur_end = 0.0
    for start, end in sorted(intervals):
        if end < start:
            raise ValueError(f"interval ends before it starts: {(start, end)}")
        if cur_start is None or start > cur_end:
            if cur_start is not None:
                total += cur_end - cur_start
            cur_start, cur_end = start, end
        else:
            cur_end = max(cur_end, end)
    if cur_start is not None:
        total += cur_end - cur_start
    return total


def phase_of(schema: str | None) -> str:
    """Which step of which method asked, told by the guided-JSON schema the request carried."""
    if schema is None:
        return "free-text"
    props = json.loads(schema).get("properties", {})
    if "items" in props and '"event_id"' in schema:
        return "window-pass1"
    if "sextuples" in props:
        return "sextuple"  # direct / rag, or window pass 2
    if "events" in props:
        return "chain-direct"
    if "emotions" in props:
        return "chain-window"
    if set(props) == {"reason"}:
        return "chain-merge"
    return "other"


BLOCKS = (16, 128)  # GPU vLLM's default block size, and the CPU backend's


def reusable_prefix_tokens(records: list[dict[str, Any]], block: int) -> list[int]:
    """Per record (in submit order): prompt tokens an unbounded prefix cache with this block size could serve.

    Mirrors vLLM's scheme (a block is reusable when the chain of full blocks before it, and itself, was seen
    before; the last prompt token is always computed), without eviction: what the prompt layout allows.
    """
    seen: set[int] = set()
    out = []
    for r in sorted(records, key=lambda r: r["submit"]):
        ids = r["prompt_ids"] or []
        h = 0
        hit, missed = 0, False
        for start in range(0, len(ids) - len(ids) % block, block):
            h = hash((h, tuple(ids[start:start + block])))
            if not missed and h in seen:
                hit += block
            else:
                missed = True
                seen.add(h)
        out.append(min(hit, max(0, len(ids) - 1)))
    return out


def _phase_figures(recs: list[dict[str, Any]]) -> dict[str, Any]:
    prompt = sum(len(r["prompt_ids"] or ()) for r in recs)
    cached = sum(r.get("cached", 0) for r in recs)
    # filled in by summarize over all requests in order, since prefixes are shared across steps (the system text)
    ideal = {f"reusable_prefix_rate_block{b}": round(sum(r.get(f"_reuse{b}", 0) for r in recs) / prompt, 4)
             if prompt else None for b in BLOCKS}
    return {"requests": len(recs), "prompt_tokens": prompt, "cached_prompt_tokens": cached,
            "prefix_cache_hit_rate": round(cached / prompt, 4) if prompt else None, **ideal,
            "generated_tokens": sum(r.get("generated", 0) for r in recs),
            "mean_prompt_tokens": round(prompt / len(recs), 1) if recs else None}


def summarize(records: list[dict[str, Any]], schemas: list[str]) -> dict[str, Any]:
    """Totals, engine occupancy, and per-dialogue waiting between dependent steps.

    - `llm_phase_s`: first request submitted to last one finished (the pipeline's engine-facing time);
    - `engine_busy_fraction`: share of that with at least one request inside the engine;
    - `mean_in_flight`: average number of requests inside the engine (what continuous batching had to work with);
    - per dialogue (requests grouped by the Ray task that ran its state machine): `dialogue_waiting_fraction` is the
      share of a dialogue's lifetime with none of its requests in the engine, i.e. spent in our code between
      dependent steps (parsing the answer, updating the bucket, building the next prompt, event-loop turns);
    - where the LLM phase is spent: `in_flight_by_tenth` (mean requests in the engine over each tenth of the phase:
      a slow ramp means dialogues were held back, a long thin tail means one dependent chain outlived the rest),
      `last_dialogue_start_s` (phase start to the last dialogue's first request) and `longest_dialogue_lifetime_s`
      (one dialogue's first request to its last answer: however the engine batches, the phase lasts at least one
      dialogue's chain of dependent calls; the replay, which sends every prompt at once, has no such bound).
    """
    done = [dict(r) for r in records if r.get("finish") is not None and "error" not in r]
    if not done:
        return {"requests": 0, "failed_requests": len(records)}
    done.sort(key=lambda r: r["submit"])
    for b in BLOCKS:
        for r, n in zip(done, reusable_prefix_tokens(done, b)):
            r[f"_reuse{b}"] = n
    t0 = min(r["submit"] for r in done)
    t1 = max(r["finish"] for r in done)
    span = t1 - t0
    occupancy = sum(r["finish"] - r["submit"] for r in done)
    ttft = [r["first"] - r["submit"] for r in done if r.get("first") is not None]
    by_phase: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in done:
        by_phase[phase_of(schemas[r["schema"]] if r.get("schema") is not None else None)].append(r)
    by_task: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in done:
        if r.get("task"):
            by_task[r["task"]].append(r)
    lifetime = in_engine = 0.0
    for recs in by_task.values():
        lifetime += max(r["finish"] for r in recs) - min(r["submit"] for r in recs)
        in_engine += union_seconds((r["submit"], r["finish"]) for r in recs)
    gen = sum(r.get("generated", 0) for r in done)
    tenths = [0.0] * 10
    if span > 0:
        for r in done:
            a, b = (r["submit"] - t0) / span * 10, (r["finish"] - t0) / span * 10
            for i in range(int(a), min(int(b), 9) + 1):
                tenths[i] += max(0.0, min(b, i + 1) - max(a, i))
    starts = [min(r["submit"] for r in recs) for recs in by_task.values()]
    lives = [max(r["finish"] for r in recs) - min(r["submit"] for r in recs) for recs in by_task.values()]
    return {
        **_phase_figures(done),
        "failed_requests": len(records) - len(done),
        "start": t0,
        "end": t1,
        "llm_phase_s": round(span, 3),
        "generated_tokens_per_s": round(gen / span, 2) if span > 0 else None,
        "engine_busy_fraction": round(union_seconds((r["submit"], r["finish"]) for r in done) / span, 4) if span else None,
        "mean_in_flight": round(occupancy / span, 2) if span else None,
        "mean_time_to_first_token_s": round(sum(ttft) / len(ttft), 4) if ttft else None,
        "mean_request_s": round(occupancy / len(done), 4),
        "phases": {k: _phase_figures(v) for k, v in sorted(by_phase.items())},
        "dialogues_seen": len(by_task),
        "dialogue_waiting_fraction": round(1 - in_engine / lifetime, 4) if lifetime > 0 else None,
        "mean_dialogue_lifetime_s": round(lifetime / len(by_task), 3) if by_task else None,
        "longest_dialogue_lifetime_s": round(max(lives), 3) if lives else None,
        "last_dialogue_start_s": round(max(starts) - t0, 3) if starts else None,
        "in_flight_by_tenth": [round(x, 1) for x in tenths],
    }
