"""benchmarks/aer_prefix_bench.py end to end against a simulated two-replica pool (no Ray, no engine): each replica
keeps the prompts it has seen and counts the longest shared prefix as cached, as vLLM's prefix cache does; placement
follows the affinity key like ModelPool (a key sticks to the replica it was first given, new keys go round robin)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from emocaustics.models.base import ChatRequest, Completion
from tasks.aer.aer_fixtures import doc, question, topic, write_dataset


class _Replica:
    def __init__(self, stats: dict[str, int]) -> None:
        self.seen: list[str] = []
        self.stats = stats
        self.name = "replica"

    async def generate(self, requests: list[ChatRequest]) -> list[Completion]:
        out = []
        for r in requests:
            prompt = "".join(m["content"] for m in r.messages)
            cached = max((len(_common(prompt, p)) for p in self.seen), default=0)
            self.seen.append(prompt)
            self.stats["prompt_tokens"] += len(prompt)
            self.stats["cached_prompt_tokens"] += cached
            self.stats["generated_tokens"] += 5
            self.stats["calls"] += 1
            out.append(Completion(text='{"answer": ["A"]}', parsed={"answer": ["A"]}))
        return out


def _common(a: str, b: str) -> str:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return a[:n]


class FakePool:
    def __init__(self, replicas: int = 2) -> None:
        self.counters = {"prompt_tokens": 0, "cached_prompt_tokens": 0, "generated_tokens": 0, "calls": 0}
        self.replicas = [_Replica(self.counters) for _ in range(replicas)]
        self.placed: dict[str, int] = {}

    async def start(self) -> float:
        return 0.0

    async def run(self, fn, items, affinity_key=None, *, weight_key=None) -> list[Any]:  # noqa: ANN001
        out = []
        for item in items:
            key = affinity_key(item)
            i = self.placed.setdefault(key, len(self.placed) % len(self.replicas))
            out.append(await fn(self.replicas[i], item))
        return out

    async def stats(self) -> dict[str, Any]:
        return {**self.counters, "replicas": len(self.replicas)}


def test_prefix_bench_reports_both_placements(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from benchmarks import aer_prefix_bench

    qs = [question(n, 1 + n % 2, "A") for n in range(1, 13)]
    root = write_dataset(tmp_path / "data", {"sample": (qs, [topic(t, [doc(i, t, words=300) for i in (1, 2)])
                                                             for t in (1, 2)])})
    monkeypatch.setattr("emocaustics.models.factory.make_llm", lambda spec: FakePool())
    out = tmp_path / "bench.json"
    assert aer_prefix_bench.main(["--data", str(root), "--out", str(out), "--no-ratio"]) == 0
    res = json.loads(out.read_text())
    no_aff, aff = res["figures"]["affinity"]["phases"]
    assert (no_aff["affinity"], aff["affinity"]) == ("question", "topic")
    assert no_aff["questions"] == aff["questions"] == 12 and no_aff["failed"] == aff["failed"] == 0
    # same prompts both times; with per-topic placement every question after a topic's first reuses its documents
    assert no_aff["prompt_tokens"] == aff["prompt_tokens"]
    assert aff["prefix_cache_hit_rate"] > no_aff["prefix_cache_hit_rate"] > 0
    assert res["inputs"]["topics"] == 2 and res["figures"]["affinity"]["replicas"] == 2
    assert res["figures"]["prefix_cache_hit_rate"] == {"affinity_topic": aff["prefix_cache_hit_rate"],
                                                       "affinity_question": no_aff["prefix_cache_hit_rate"]}
    # a rerunnable record: the command, and the load average beside every timing
    assert res["run"]["command"].startswith("python -m benchmarks.aer_prefix_bench --data")
    assert len(res["run"]["load_avg_1m"]) == 2 and all(len(p["load_avg_1m"]) == 2 for p in (aff, no_aff))
    assert out.with_suffix(".md").read_text().count("| topic |") == 1
