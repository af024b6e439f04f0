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


# -- exact figures and messages (issue 29: each test pins the number or text a mutant would change) --------------------
def test_a_proper_subset_is_half_credit_an_equal_set_full_credit() -> None:
    # gold {A, B, C}: {A, B} is a proper subset (0.5); {A, B, C} equal (1.0); {A, B, C} | {D} a superset (0)
    assert [question_score(p, "ABC") for p in ("AB", "ABC", "ABCD", "D", "")] == [0.5, 1.0, 0.0, 0.0, 0.0]
    assert [Item("q", 1, ("A", "B"), p).outcome for p in (("A", "B"), ("A",), ("C",), None)] == \
        ["exact", "partial", "wrong", "wrong"]


def test_summary_of_no_question_is_all_zero() -> None:
    # n = 0: every rate is 0.0 (not 0 / 0), every count 0, no breakdown
    assert summarize([], split=None) == {
        "task": "aer", "split": None, "score": 0.0, "exact_match_rate": 0.0, "partial_match_rate": 0.0,
        "wrong_rate": 0.0, "total": 0, "exact_match": 0, "partial_match": 0, "wrong": 0, "unanswered": 0,
        "missing": [], "by_gold_size": {}, "by_topic": {}}


def test_summary_whole_document_on_a_worked_example() -> None:
    s = summarize(_items(), split="dev", missing=["q-9"])
    # overall: (1 + 0.5 + 0.5 + 0 + 0) / 5 = 0.4; 1 exact, 2 partial, 2 wrong; one unanswered (q-5)
    assert {k: v for k, v in s.items() if not k.startswith("by_")} == {
        "task": "aer", "split": "dev", "score": 0.4, "exact_match_rate": 0.2, "partial_match_rate": 0.4,
        "wrong_rate": 0.4, "total": 5, "exact_match": 1, "partial_match": 2, "wrong": 2, "unanswered": 1,
        "missing": ["q-9"]}  # the given list wins over the unanswered ids
    assert list(s)[2] == "score"  # score first after task and split
    # gold size 1: q-1 (1), q-4 (0), q-5 (0) -> 1/3 exact, 2/3 wrong; size 2: q-2 partial; size 3: q-3 partial
    assert s["by_gold_size"] == {
        "1": {"score": 1 / 3, "exact_match_rate": 1 / 3, "partial_match_rate": 0.0, "wrong_rate": 2 / 3, "total": 3,
              "exact_match": 1, "partial_match": 0, "wrong": 2},
        "2": {"score": 0.5, "exact_match_rate": 0.0, "partial_match_rate": 1.0, "wrong_rate": 0.0, "total": 1,
              "exact_match": 0, "partial_match": 1, "wrong": 0},
        "3": {"score": 0.5, "exact_match_rate": 0.0, "partial_match_rate": 1.0, "wrong_rate": 0.0, "total": 1,
              "exact_match": 0, "partial_match": 1, "wrong": 0}}
    # topic 1: q-1 (1) + q-2 (0.5) -> 0.75; topic 2: q-3 (0.5), q-4 (0), q-5 (0) -> 0.5 / 3
    assert s["by_topic"]["1"] == {"score": 0.75, "exact_match_rate": 0.5, "partial_match_rate": 0.5, "wrong_rate": 0.0,
                                  "total": 2, "exact_match": 1, "partial_match": 1, "wrong": 0}
    assert s["by_topic"]["2"] == {"score": 0.5 / 3, "exact_match_rate": 0.0, "partial_match_rate": 1 / 3,
                                  "wrong_rate": 2 / 3, "total": 3, "exact_match": 0, "partial_match": 1, "wrong": 2}
    assert list(s["by_topic"]) == ["1", "2"] and list(s["by_gold_size"]) == ["1", "2", "3"]
    assert summarize(_items(), missing=[])["missing"] == []  # an empty given list is kept, not replaced
    assert summarize(_items())["split"] is None


def test_breakdowns_are_sorted_by_number() -> None:
    items = [Item("q-1", 10, ("A", "B"), ("A", "B")), Item("q-2", 2, ("A",), ("B",))]
    s = summarize(items)
    # keys sorted as numbers (2 before 10), not as text
    assert list(s["by_topic"]) == ["2", "10"] and list(s["by_gold_size"]) == ["1", "2"]
    assert (s["by_topic"]["10"]["score"], s["by_topic"]["2"]["score"]) == (1.0, 0.0)


def _msg(err: pytest.ExceptionInfo[DataError]) -> str:
    return str(err.value)


def test_submission_text_from_a_folder_a_nested_folder_and_a_zip(tmp_path: Path) -> None:
    from emocaustics.tasks.aer.scoring import submission_text
    (tmp_path / "run" / "cfg" / "predictions").mkdir(parents=True)
    nested = tmp_path / "run" / "cfg" / "predictions" / "submission.jsonl"
    nested.write_bytes(b'\xef\xbb\xbf{"id": "q-1", "answer": "A"}\r\n')  # a BOM and CRLF: decoded away
    assert submission_text(tmp_path / "run") == (str(nested), '{"id": "q-1", "answer": "A"}\n', nested)
    top = tmp_path / "run" / "submission.jsonl"
    top.write_text("top\n")  # the folder's own file wins over the one below it
    assert submission_text(tmp_path / "run") == (str(top), "top\n", top)
    z = tmp_path / "sub.zip"
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("README.txt", "not this")
        zf.writestr("inner/answers.jsonl", '{"id": "q-1"}\r\n')
    assert submission_text(z) == (f"{z}:inner/answers.jsonl", '{"id": "q-1"}\n', z)


def test_submission_text_errors_say_what_to_pass(tmp_path: Path) -> None:
    from emocaustics.tasks.aer.scoring import submission_text
    with pytest.raises(DataError) as err:
        submission_text(tmp_path)
    assert _msg(err) == (f"{tmp_path}: no submission.jsonl in this folder (nor below it): pass --pred the submission "
                         "file, its zip, or the predictions folder of a finished AER config")
    for i in range(2):
        (tmp_path / f"c{i}").mkdir()
        (tmp_path / f"c{i}" / "submission.jsonl").write_text("x")
    with pytest.raises(DataError) as err:
        submission_text(tmp_path)
    assert _msg(err) == f"{tmp_path}: 2 submission.jsonl files below this folder (c0, c1): pass --pred one of them"
    for i in range(2, 10):  # exactly 10 files: all listed, no " ..."
        (tmp_path / f"c{i:02d}").mkdir()
        (tmp_path / f"c{i:02d}" / "submission.jsonl").write_text("x")
    with pytest.raises(DataError) as err:
        submission_text(tmp_path)
    listed = ", ".join(["c0", "c02", "c03", "c04", "c05", "c06", "c07", "c08", "c09", "c1"])
    assert _msg(err) == f"{tmp_path}: 10 submission.jsonl files below this folder ({listed}): pass --pred one of them"
    for i in range(10, 11):  # 11 files: the first 10 (sorted) listed, then " ..."
        (tmp_path / f"c{i:02d}").mkdir()
        (tmp_path / f"c{i:02d}" / "submission.jsonl").write_text("x")
    with pytest.raises(DataError) as err:
        submission_text(tmp_path)
    listed = ", ".join(["c0", "c02", "c03", "c04", "c05", "c06", "c07", "c08", "c09", "c1"])
    assert _msg(err) == f"{tmp_path}: 11 submission.jsonl files below this folder ({listed} ...): pass --pred one of them"
    with pytest.raises(DataError) as err:
        submission_text(tmp_path / "absent.jsonl")
    assert _msg(err) == f"{tmp_path / 'absent.jsonl'}: no such submission file or folder"
    for names in ((), ("a.jsonl", "b.jsonl")):
        z = tmp_path / f"z{len(names)}.zip"
        with zipfile.ZipFile(z, "w") as zf:
            zf.writestr("notes.txt", "x")
            for n in names:
                zf.writestr(n, "x")
        with pytest.raises(DataError) as err:
            submission_text(z)
        assert _msg(err) == (f"{z}: a submission zip holds one .jsonl file (submission.jsonl at its root); this one "
                             f"holds {len(names)}")
    z = tmp_path / "bad.zip"
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("submission.jsonl", b"\n\xff")
    with pytest.raises(DataError) as err:
        submission_text(z)
    assert _msg(err).startswith(f"{z}:submission.jsonl, record line 2: not UTF-8 text: byte 0xff")


@pytest.mark.skipif(not Path("/proc/self/mem").is_file(), reason="needs Linux's /proc/self/mem")
def test_an_unreadable_submission_file_says_what_was_expected() -> None:
    # /proc/self/mem is a regular file that read() refuses (EIO) even for root: the OSError branch of read_text
    from emocaustics.tasks.aer.scoring import submission_text
    with pytest.raises(DataError) as err:
        submission_text("/proc/self/mem")
    assert _msg(err) == "/proc/self/mem: cannot read the submission file (JSON lines) (Input/output error)"


def _read_error(tmp_path: Path, text: str, n: int = 3) -> str:
    p = tmp_path / "s.jsonl"
    p.write_text(text)
    with pytest.raises(DataError) as err:
        read_submission(p, _samples(n))
    return _msg(err)


def test_read_submission_exact_messages(tmp_path: Path) -> None:
    p = tmp_path / "s.jsonl"
    expected = '; '.join([
        "line 1: not JSON (Expecting value at column 1)",
        'line 2: expected an object {"id": "q-N", "answer": "A,C"}, got [1, 2]',
        "line 3, field 'id': missing" + ' (expected {"id": "q-N", "answer": "A,C"})',
        "line 4, field 'answer': missing" + ' (expected {"id": "q-N", "answer": "A,C"})',
        "line 5, field 'id': not a string: 7" + ' (expected {"id": "q-N", "answer": "A,C"})',
        "line 6 (" + "q-" + "x" * 38 + "), field 'answer': 'Z' is not comma-separated letters A-D",  # id cut at 40
        "line 7, field 'id': 'q-8' is not a question of this split",
        "line 9, field 'id': 'q-1' again (first on line 8)"])
    lines = ["nope", "[1, 2]", '{"answer": "A"}', '{"id": "q-1"}', '{"id": 7, "answer": "A"}',
             '{"id": "q-' + "x" * 50 + '", "answer": "Z"}', '{"id": "q-8", "answer": "A"}',
             '{"id": "q-1", "answer": "A"}', '{"id": "q-1", "answer": "B"}']
    assert _read_error(tmp_path, "\n".join(lines)) == f"{p}: {expected}"
    # 10 errors are all listed, with no tail; 12 errors: the first 10, then "(and 2 more)"
    ten = _read_error(tmp_path, "x\n" * 10)
    assert ten.count("not JSON") == 10 and not ten.endswith("more)")
    twelve = _read_error(tmp_path, "x\n" * 12)
    assert twelve.count("not JSON") == 10 and twelve.endswith("line 10: not JSON (Expecting value at column 1) "
                                                               "(and 2 more)")
    assert _read_error(tmp_path, "\n \n") == f"{p}: the submission has no answer (an empty file): nothing to score"


def test_read_submission_keeps_the_source_and_the_split_order_of_missing_ids(tmp_path: Path) -> None:
    p = tmp_path / "s.jsonl"
    p.write_text('{"id": "q-2", "answer": "D,B,B"}\n')
    sub = read_submission(p, _samples(4))
    assert sub.predictions == {"q-2": ("B", "D")} and sub.missing == ["q-1", "q-3", "q-4"] and sub.source == p


def test_parse_letters() -> None:
    from emocaustics.tasks.aer.scoring import parse_letters
    assert parse_letters(" B , A,B ") == ("A", "B")
    assert parse_letters("  ") == () and parse_letters(None) is None and parse_letters("A,,B") is None


def test_ids_in_numeric_order_then_others(tmp_path: Path) -> None:
    # q-01 and q-1 are both 1: the id breaks the tie ("q-01" < "q-1"); ids without a number go last
    preds = {"q-x": ["A"], "q-1": ["B"], "q-01": ["C"], "q-2": ["D"]}
    path, zpath = write_submission(tmp_path / "deep" / "er" / "sub.jsonl", preds)  # both folders made
    assert path.read_text() == ('{"id": "q-01", "answer": "C"}\n{"id": "q-1", "answer": "B"}\n'
                                '{"id": "q-2", "answer": "D"}\n{"id": "q-x", "answer": "A"}\n')
    assert zpath == tmp_path / "deep" / "er" / "sub.zip"
    # the number after the LAST dash counts (t-9-q-10 is 10, after t-1-q-2); an id without a dash goes last
    other, _ = write_submission(tmp_path / "o.jsonl", {"plain": ["A"], "t-1-q-10": ["B"], "t-9-q-2": ["C"]})
    assert [json.loads(x)["id"] for x in other.read_text().splitlines()] == ["t-9-q-2", "t-1-q-10", "plain"]
    with zipfile.ZipFile(zpath) as zf:
        info = zf.getinfo("submission.jsonl")
        assert info.compress_type == zipfile.ZIP_DEFLATED and zf.read(info).decode() == path.read_text()
    empty, _ = write_submission(tmp_path / "e.jsonl", {})
    assert empty.read_text() == ""
    doc = results_document({}, {}, [Item("q-x", 1, ("A", "C"), ("C", "A")), Item("q-10", 1, ("B",), None),
                                    Item("q-9", 1, ("A",), None, "timeout")], {})
    assert doc["predictions"] == [
        {"id": "q-9", "golden": "A", "prediction": "", "raw_output": "timeout", "score": 0.0},
        {"id": "q-10", "golden": "B", "prediction": "", "raw_output": "", "score": 0.0},
        {"id": "q-x", "golden": "A,C", "prediction": "C,A", "raw_output": "", "score": 1.0}]
    assert doc["config"] == {} and doc["results"] == {}
