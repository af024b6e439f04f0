"""Reading JSON v3: errors name the file and the JSON path; incomplete values are not errors; spans are checked
against the text; folders pair by story name."""

import json

import pytest
from tasks.narrative.narrative_builders import SIX, doc, ev, rel, story

from emocaustics.core.errors import UsageError
from emocaustics.tasks.narrative.io import load_story, pair_folders, read_story, story_name
from emocaustics.tasks.narrative.schema import NarrativeFormatError, check_spans, parse_story


def error_of(obj):
    with pytest.raises(NarrativeFormatError) as exc:
        parse_story(obj, "s.json")
    return exc.value


@pytest.mark.parametrize("obj, path", [
    ([], "$"),
    ({"metadata": {}}, "$.version"),
    ({"version": "2.0"}, "$.version"),
    ({"version": "3.0", "characters": {"a": 1}}, "$.characters"),
    ({"version": "3.0", "characters": [{"name": 5}]}, "$.characters[0].name"),
    ({"version": "3.0", "source_info": {"text_content": ["x"]}}, "$.source_info.text_content"),
    ({"version": "3.0", "narrative_events": [{"text_span": {"start": "3", "end": 5}}]},
     "$.narrative_events[0].text_span.start"),
    ({"version": "3.0", "narrative_events": [{}, {"relationships": [{"sentiment": [1]}]}]},
     "$.narrative_events[1].relationships[0].sentiment[0]"),
    ({"version": "3.0", "narrative_events": [{"action_layer": ["physical"]}]}, "$.narrative_events[0].action_layer"),
    ({"version": "3.0", "narrative_events": [{"text_span": {"start": True, "end": 5}}]},
     "$.narrative_events[0].text_span.start"),
])
def test_errors_name_the_file_and_json_path(obj, path):
    err = error_of(obj)
    assert err.file == "s.json" and err.field == path
    assert "s.json" in str(err) and path in str(err)


def test_version_forms_accepted():
    for v in ("3.0", "3", 3, 3.0):
        assert parse_story({"version": v}, "s.json").events == []


def test_incomplete_values_are_not_errors():
    s = story(doc(None, None, [{"id": 7, "text_span": None, "agents": "A", "targets": None, "relationships": None,
                                "action_layer": {}}, None]))
    assert s.text is None and s.characters == []
    assert s.events[0].id == "7" and s.events[0].agents == ("A",) and s.events[0].action is None
    assert s.events[1].span is None and s.events[1].relationships == ()


def test_alias_and_sentiment_may_be_strings():
    s = story(doc(SIX, [{"name": " A ", "alias": "Ay", "archetype": ""}],
                  [ev("e1", rels=[rel("A", "B", sentiment="joy")])]))
    assert s.characters[0].name == "A" and s.characters[0].aliases == ("Ay",) and s.characters[0].archetype is None
    assert s.events[0].relationships[0].sentiment == ("joy",)


def test_span_checks():
    s = story(doc(SIX, [], [ev("e1", 0, 3, text="甲一。"), ev("e2", 3, 6, text="wrong"), ev("e3", 10, 99),
                            ev("e4", 5, None)]))
    kinds = [(i.kind, i.path) for i in check_spans(s, SIX, "pred")]
    assert kinds == [("span_text_mismatch", "$.narrative_events[1].text_span"),
                     ("span_out_of_range", "$.narrative_events[2].text_span"),
                     ("span_incomplete", "$.narrative_events[3].text_span")]


def test_files(tmp_path):
    (tmp_path / "bad.json").write_text('{"version": "3.0",', encoding="utf-8")
    err = load_story(tmp_path / "bad.json")
    assert isinstance(err, NarrativeFormatError) and "not JSON" in str(err) and "line 1" in str(err)
    (tmp_path / "s_pred.json").write_text(json.dumps(doc(SIX, [], [])), encoding="utf-8")
    assert read_story(tmp_path / "s_pred.json").name == "s" and story_name(tmp_path / "a_pred.json") == "a"


def test_pairing(tmp_path):
    p, g = tmp_path / "pred", tmp_path / "gt"
    p.mkdir(), g.mkdir()
    for name in ("a", "b", "c"):
        (g / f"{name}.json").write_text("{}")
    for name in ("a_pred", "b", "z_pred"):
        (p / f"{name}.json").write_text("{}")
    pairing = pair_folders(p, g)
    assert [(n, pp.name, gg.name) for n, pp, gg in pairing.pairs] == [("a", "a_pred.json", "a.json"),
                                                                        ("b", "b.json", "b.json")]
    assert pairing.unpaired_gt == ["c"] and pairing.unpaired_pred == ["z_pred.json"]  # the file, as named
    (p / "a.json").write_text("{}")
    assert pair_folders(p, g).duplicates == ["a: a.json and a_pred.json"]
    with pytest.raises(UsageError):
        pair_folders(tmp_path / "nope", g)


def test_text_content_is_read_as_every_string_field_is_but_kept_verbatim():
    """`source_info.text_content`: checked by the reader's one type rule (the same words as every field), null or
    empty is no text, and a text is kept as written (not stripped: span offsets index into it)."""
    err = error_of({"version": "3.0", "source_info": {"text_content": 7}})
    assert err.detail == "expected a string, found an integer" and err.field == "$.source_info.text_content"
    for value in (None, ""):
        assert parse_story({"version": "3.0", "source_info": {"text_content": value}}, "s.json").text is None
    assert parse_story({"version": "3.0", "source_info": {"text_content": "  Once.\n"}}, "s.json").text == "  Once.\n"
