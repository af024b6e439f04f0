"""report/across.py without a browser: the pairs `compare` makes joined into the groups the viewer shows (three runs
of one label are one group of three, not three pairs), and answers compared as JSON whatever their key order."""

from __future__ import annotations

from emocaustics.report.across import _answer, _groups


def test_pairs_join_into_groups_in_the_order_they_come() -> None:
    pairs = [("a\tx", "b\tx"), ("a\tx", "c\tx"), ("a\ty", "b\ty"), ("b\tx", "c\tx")]
    assert _groups(pairs) == [["a\tx", "b\tx", "c\tx"], ["a\ty", "b\ty"]]
    # a mapping (--pair p q, --pair p r) that links configs of two labels through one: one group
    assert _groups([("a\tp", "b\tq"), ("a\tp", "b\tr")]) == [["a\tp", "b\tq", "b\tr"]]
    assert _groups([]) == []


def test_answers_compare_as_json() -> None:
    assert _answer('{"b": 1, "a": [2]}') == _answer('{"a":[2],"b":1}')
    assert _answer('{"answer": ["A"]}') != _answer('{"answer": ["B"]}')
    assert _answer(None) is None and _answer("not json") == "not json"
