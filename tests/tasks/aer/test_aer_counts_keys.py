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


def test_score_rows_per_question(tmp_path) -> None:
    """Each scored question: a `score` row, then one 0/1 row per outcome (the one it had is 1), with its status; a
    failed question's rows say failed and why."""
    from emocaustics.core.task import Failure, ScoreContext, get_task, parse_options
    from emocaustics.tasks.aer.scoring import OUTCOMES, question_score
    from tasks.aer.aer_fixtures import standard_dataset

    task = get_task("aer")
    opts = parse_options(task, {"method": "random", "seed": 3})
    samples = task.load(task.Dataset(split="sample", data=str(standard_dataset(tmp_path))), opts).samples
    preds = task.predict("random", samples, opts)
    preds[samples[0].id] = Failure("answer", "boom")
    rows = task.score(samples, preds, opts, ScoreContext()).rows
    for s in samples:
        got = rows.filter(rows["sample_id"] == s.id)
        assert got["metric"].to_list() == ["score", *OUTCOMES]
        if s is samples[0]:
            assert set(got["status"]) == {"failed"} and got["value"].to_list() == [0.0, 0.0, 0.0, 1.0]
            assert got["reason"][0].startswith("failed:")
            continue
        value = question_score(preds[s.id]["answer"], s.target)
        outcome = {1.0: "exact", 0.5: "partial", 0.0: "wrong"}[value]
        assert got["value"].to_list() == [value, *(float(o == outcome) for o in OUTCOMES)]
        assert set(got["status"]) == {"ok"}
