"""Taxonomies: shipped defaults, user replacement, labels outside the taxonomy reported per file and field."""

import json

import pytest
from tasks.narrative.narrative_builders import SIX, act, ch, doc, ev, rel, story

from emocaustics.core.errors import DataError
from emocaustics.tasks.narrative.taxonomy import default_taxonomy, load_taxonomy


def test_defaults():
    t = default_taxonomy()
    assert "siblings" in t.relationships["family"] and t.polarity("JOY") == "positive"
    assert t.polarity("negative") == "negative" and t.polarity("annoyance") == "unknown"
    assert "give" in t.action_values("type") and "climax" in t.action_values("function")
    assert "physical" in t.action_values("category") and "mentor" in t.archetypes


def test_replacement_folder_keeps_defaults_for_absent_files(tmp_path):
    (tmp_path / "sentiment.json").write_text(json.dumps({"_doc": "x", "happy": "positive", "sad": "negative"}))
    t = load_taxonomy(tmp_path)
    assert t.sentiments == {"happy": "positive", "sad": "negative"} and t.polarity("joy") == "unknown"
    assert t.relationships == default_taxonomy().relationships


def test_per_category_lists_override_the_shared_ones(tmp_path):
    (tmp_path / "action.json").write_text(json.dumps({
        "categories": {"a": {"types": ["t1"], "statuses": ["only"]}, "b": {"types": ["t2"]}},
        "contexts": ["c"], "statuses": ["s"], "functions": ["f"]}))
    t = load_taxonomy(tmp_path)
    assert t.categories["a"]["statuses"] == ("only",) and t.categories["b"]["statuses"] == ("s",)


@pytest.mark.parametrize("name, content, field", [
    ("sentiment.json", {"joy": "happy"}, "$.joy"),
    ("relationship.json", {"family": "siblings"}, "$.family"),
    ("action.json", {"categories": {}}, "$.categories"),
    ("action.json", {"categories": {"a": {"types": [""]}}}, "$.categories.a.types"),
])
def test_bad_taxonomy_files_name_file_and_field(tmp_path, name, content, field):
    (tmp_path / name).write_text(json.dumps(content))
    with pytest.raises(DataError) as exc:
        load_taxonomy(tmp_path)
    assert exc.value.field == field and name in str(exc.value)


def test_labels_outside_the_taxonomy_are_reported_per_field():
    s = story(doc(SIX, [ch("A", None, "wizard")], [
        ev("e1", rels=[rel("A", "B", "family", "rivals", ["joy", "annoyance"])],
           action=act("verbal", "quarrel", "home", "completed", "climax"))]))
    found = [(i.path, i.message) for i in default_taxonomy().check_story(s, "gt")]
    paths = [p for p, _ in found]
    assert paths == ["$.characters[0].archetype", "$.narrative_events[0].relationships[0].relationship_level2",
                     "$.narrative_events[0].relationships[0].sentiment[1]", "$.narrative_events[0].action_layer.type"]
    assert "rivals" in found[1][1] and "under family" in found[1][1]
