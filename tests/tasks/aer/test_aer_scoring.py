"""The organisers' scoring rule, its breakdowns, and the submission files (read, write, zip, results JSON)."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from emocaustics.core.errors import DataError
from emocaustics.core.task import Sample
from emocaustics.tasks.aer.scoring import (Item, question_score, read_submission, results_document, summarize,
                                           write_submission)


# The README's own examples, gold {A, B}.
@pytest.mark.parametrize("pred, expected", [
    ({"A", "B"}, 1.0),   # P == G
    ({"A"}, 0.5),        # non-empty proper subset
    ({"B"}, 0.5),
    ({"A", "C"}, 0.0),   # a wrong option anywhere
    (set(), 0.0),        # empty
    (None, 0.0),         # nothing predicted
])
def test_readme_examples(pred, expected) -> None:
    assert question_score(pred, {"A", "B"}) == expected


def test_supersets_score_zero() -> None:
    assert question_score({"A", "B", "C"}, {"A", "B"}) == 0.0
    assert question_score({"A", "B", "C", "D"}, {"C"}) == 0.0
    assert question_score({"A", "B", "C", "D"}, {"A", "B", "C", "D"}) == 1.0  # equal, not a superset
    assert question_score(["A", "A"], ["A"]) == 1.0  # a repeated letter is the same set


def test_fewer_options_with_a_wrong_one_score_zero() -> None:
    # fewer options than the gold is not enough for half credit: every option must be in the gold
    assert question_score({"C"}, {"A", "B"}) == 0.0
    assert question_score({"A", "D"}, {"A", "B", "C"}) == 0.0
    assert question_score({"A", "C"}, {"A", "B", "C"}) == 0.5


def _items() -> list[Item]:
    return [
        Item("q-1", 1, ("A",), ("A",)),            # exact 1.0
        Item("q-2", 1, ("A", "B"), ("B",)),        # partial 0.5
        Item("q-3", 2, ("A", "B", "C"), ("A", "C")),  # partial 0.5
        Item("q-4", 2, ("C",), ("C", "D")),        # superset 0
        Item("q-5", 2, ("D",), None, "no prediction"),  # missing 0
    ]


def test_summary_counts_rates_and_breakdowns() -> None:
    s = summarize(_items(), split="sample")
    # (1 + 0.5 + 0.5 + 0 + 0) / 5 = 0.4
    assert s["score"] == pytest.approx(0.4)
    assert (s["total"], s["exact_match"], s["partial_match"], s["wrong"]) == (5, 1, 2, 2)
    assert (s["exact_match_rate"], s["partial_match_rate"], s["wrong_rate"]) == (0.2, 0.4, 0.4)
    assert s["missing"] == ["q-5"] and s["task"] == "aer" and s["split"] == "sample"
    # gold size 1: q-1 (1), q-4 (0), q-5 (0) -> 1/3; size 2: q-2 -> 0.5; size 3: q-3 -> 0.5
    assert s["by_gold_size"]["1"]["score"] == pytest.approx(1 / 3) and s["by_gold_size"]["1"]["total"] == 3
    assert s["by_gold_size"]["2"]["score"] == 0.5 and s["by_gold_size"]["3"]["partial_match"] == 1
    # topic 1: (1 + 0.5) / 2 = 0.75; topic 2: (0.5 + 0 + 0) / 3
    assert s["by_topic"]["1"]["score"] == 0.75 and s["by_topic"]["2"]["score"] == pytest.approx(0.5 / 3)


def _samples(n: int = 3) -> list[Sample]:
    return [Sample(f"q-{i}", {"topic_id": 1}, ["A"]) for i in range(1, n + 1)]


def test_read_submission_lists_missing_ids(tmp_path: Path) -> None:
    p = tmp_path / "submission.jsonl"
    p.write_text('{"id": "q-1", "answer": "A"}\n\n{"id": "q-3", "answer": "C, A"}\n{"id": "q-2", "answer": ""}\n')
    sub = read_submission(p, _samples(4))
    assert sub.predictions == {"q-1": ("A",), "q-3": ("A", "C"), "q-2": ()}
    assert sub.missing == ["q-4"]


@pytest.mark.parametrize("line, needle", [
    ('{"id": "q-9", "answer": "A"}', "line 2, field 'id': 'q-9' is not a question of this split"),
    ('{"id": "q-2", "answer": "E"}', "line 2 (q-2), field 'answer': 'E' is not comma-separated letters A-D"),
    ('{"id": "q-2", "answer": "A;B"}', "line 2 (q-2)"),
    ('{"id": "q-2", "answer": ["A"]}', "line 2 (q-2)"),
    ('{"id": "q-2"}', "line 2, field 'answer': missing"),
    ('not json', "line 2: not JSON"),
    ('{"id": "q-1", "answer": "B"}', "line 2, field 'id': 'q-1' again (first on line 1)"),
])
def test_read_submission_errors_name_the_line(tmp_path: Path, line: str, needle: str) -> None:
    p = tmp_path / "sub.jsonl"
    p.write_text('{"id": "q-1", "answer": "A"}\n' + line + "\n")
    with pytest.raises(DataError) as err:
        read_submission(p, _samples())
    assert needle in str(err.value) and str(p) in str(err.value)


def test_write_submission_and_zip_round_trip(tmp_path: Path) -> None:
    preds = {"q-10": ["C", "A"], "q-9": ("B",), "q-100": None}
    path, zpath = write_submission(tmp_path / "submission.jsonl", preds)
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    # numeric id order; letters sorted and comma-joined; a failure is an empty answer (scores 0)
    assert lines == [{"id": "q-9", "answer": "B"}, {"id": "q-10", "answer": "A,C"}, {"id": "q-100", "answer": ""}]
    with zipfile.ZipFile(zpath) as zf:
        assert zf.namelist() == ["submission.jsonl"]
        assert zf.read("submission.jsonl").decode() == path.read_text()
    samples = [Sample(i, {"topic_id": 1}, ["A"]) for i in ("q-9", "q-10", "q-100")]
    assert read_submission(path, samples).predictions["q-10"] == ("A", "C")


def test_results_document_has_the_baseline_shape() -> None:
    items = _items()
    doc = results_document({"model": "m"}, summarize(items), items, {"q-1": "raw one"})
    assert set(doc) == {"config", "results", "predictions"}
    first = doc["predictions"][0]
    assert {"id", "golden", "prediction", "raw_output"} <= set(first)
    assert first == {"id": "q-1", "golden": "A", "prediction": "A", "raw_output": "raw one", "score": 1.0}
    assert doc["predictions"][4]["raw_output"] == "no prediction" and doc["predictions"][4]["prediction"] == ""
