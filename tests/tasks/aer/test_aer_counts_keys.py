"""The summary block of the published results (`scoring._counts`, by gold size and topic too): its keys in the
published order, each rate the count over the questions, and an empty block all zeros."""

from __future__ import annotations

from emocaustics.tasks.aer.scoring import Item, summarize

KEYS = ["score", "exact_match_rate", "partial_match_rate", "wrong_rate", "total", "exact_match", "partial_match",
        "wrong"]


def test_counts_keys_order_and_values() -> None:
    items = [Item("q-1", 1, ("A", "C"), ("A", "C")), Item("q-2", 1, ("A", "C"), ("A",)),
             Item("q-3", 2, ("B",), ("B", "D")), Item("q-4", 2, ("D",), None, "no prediction")]
    got = summarize(items, split="dev")
    block = {k: got[k] for k in KEYS}
    assert list(got)[2:2 + len(KEYS)] == KEYS
    assert block == {"score": 1.5 / 4, "exact_match_rate": 0.25, "partial_match_rate": 0.25, "wrong_rate": 0.5,
                     "total": 4, "exact_match": 1, "partial_match": 1, "wrong": 2}
    assert list(got["by_topic"]["2"]) == KEYS and got["by_topic"]["2"]["wrong"] == 2
    assert summarize([], split="dev")["wrong_rate"] == 0.0 and summarize([])["score"] == 0.0
