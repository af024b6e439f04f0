"""Reading and validating single files: malformed JSON, encodings, repair, field checks, labels, source ids."""

from __future__ import annotations

import json

import pytest

from emocaustics.tasks.longdialogue.data.io import parse_chains, parse_chat_records, read_json, split_source_ids

REC = {"sentence": "你好", "Holder": "1", "Target": "2", "Aspect": "问候", "Opinion": "友好", "Sentiment": "positive",
       "Rationale": "打招呼"}


def test_malformed_json_reports_line_and_column(tmp_path):
    p = tmp_path / "emo_9.json"
    text = ('{\n  "1": {"events": [\n    {"event": "x", "emotions": [{"state": "positive", "reason": 坏, '
            '"source_id": "2"}]}]}\n}\n')
    p.write_text(text, encoding="utf-8")
    obj, defect = read_json(p)
    assert obj is None
    assert (defect.kind, defect.file, defect.line) == ("malformed", "emo_9.json", 3)
    column = text.splitlines()[2].index("坏") + 1  # 1-based, in characters
    assert defect.column == column
    assert f"line 3 column {column}" in str(defect)


def test_repair_is_opt_in_and_reported(tmp_path):
    p = tmp_path / "emo_9.json"
    p.write_text('{"1": {"events": [{"event": "吵架", "emotions": [{"state": "negative", "reason": 被骂了, '
                 '"source_id": "2"}]}]}}', encoding="utf-8")
    assert read_json(p)[0] is None
    obj, defect = read_json(p, repair=True)
    assert defect.kind == "repaired" and defect.line == 1 and "json-repair" in defect.message
    chains, _ = parse_chains(obj, p.name)
    assert chains["1"][0].emotions[0].reason == "被骂了"


def test_non_utf8_bytes_are_a_defect_with_position(tmp_path):
    p = tmp_path / "chat_3.json"
    p.write_bytes('[{"sentence": "你好"}]\n'.encode("utf-8") + "[{\"sentence\": \"再见\"}]".encode("gbk"))
    obj, defect = read_json(p)
    assert obj is None and defect.kind == "encoding" and defect.line == 2 and "offset" in defect.message


def test_gbk_file_is_read_only_with_repair(tmp_path):
    p = tmp_path / "chat_3.json"
    p.write_bytes(json.dumps([REC], ensure_ascii=False).encode("gbk"))
    assert read_json(p)[1].kind == "encoding"
    obj, defect = read_json(p, repair=True)
    assert defect.kind == "repaired" and "GB18030" in defect.message and obj[0]["sentence"] == "你好"


def test_valid_records_parse_without_defects():
    utts, defects = parse_chat_records([REC, dict(REC, Holder="2", sentence="嗯")], "chat_1.json")
    assert defects == []
    assert [u.holder for u in utts] == ["1", "2"] and utts[0].gt.aspect == "问候"


def test_missing_and_mistyped_fields_name_file_record_field():
    recs = [REC, {k: v for k, v in REC.items() if k != "Opinion"}, dict(REC, Holder=3), dict(REC, Target=["x"])]
    utts, defects = parse_chat_records(recs, "chat_7.json")
    assert len(utts) == 4  # nothing dropped: positions stay aligned
    got = {(d.kind, d.record, d.field) for d in defects}
    assert ("missing_field", 1, "Opinion") in got
    assert ("wrong_type", 2, "Holder") in got and utts[2].holder == "3"  # int holder coerced, and reported
    assert ("wrong_type", 3, "Target") in got
    assert all(d.file == "chat_7.json" for d in defects)


def test_top_level_and_record_shapes():
    assert parse_chat_records({"a": 1}, "chat_1.json")[1][0].kind == "wrong_type"
    utts, defects = parse_chat_records([REC, "oops"], "chat_1.json")
    assert len(utts) == 2 and defects[0].record == 1


def test_empty_dialogue_and_empty_utterance_are_reported():
    assert parse_chat_records([], "chat_2.json")[1][0].kind == "empty"
    empty = dict(REC, sentence="", Target="", Aspect="", Opinion="", Rationale="", Sentiment="")
    utts, defects = parse_chat_records([empty], "chat_2.json")
    assert utts[0].gt is None
    assert {d.kind for d in defects} == {"empty", "label_noise"}


@pytest.mark.parametrize("label,noisy", [("positive", False), (" Neutral ", False), ("DOUBT", False),
                                         ("", True), ("doubtful", True), ("strong_positive", True), ("积极", True)])
def test_label_noise_after_trim_and_lowercase(label, noisy):
    _, defects = parse_chat_records([dict(REC, Sentiment=label)], "chat_1.json")
    assert [d.kind for d in defects] == (["label_noise"] if noisy else [])


@pytest.mark.parametrize("raw,ids,rest", [
    ("2", ("2",), ()), ("1,3", ("1", "3"), ()), ("2，4", ("2", "4"), ()), ("1、2; 3", ("1", "2", "3"), ()),
    (" 02 ", ("2",), ()), ("老板娘,4,5", ("4", "5"), ("老板娘",)), ("家属", (), ("家属",)), ("", (), ()),
])
def test_source_id_splitting(raw, ids, rest):
    assert split_source_ids(raw) == (ids, rest)


def test_self_maps_to_the_holder_only_when_known():
    assert split_source_ids("self")[0] == ()
    assert split_source_ids("self", self_id="3")[0] == ("3",)
    assert split_source_ids("妈妈,2", known={"妈妈"})[0] == ("妈妈", "2")


def test_chains_validation_and_source_reports():
    obj = {
        "1": {"events": [{"event": "争吵", "emotions": [
            {"state": "negative", "reason": "被指责", "source_id": "2，3"},
            {"state": "Doubtful", "reason": "不确定", "source_id": "self"},
            {"state": "positive", "reason": "和好", "source_id": "全体"},
            {"state": "neutral", "source_id": 2},
        ]}]},
        "2": {"events": "nope"},
    }
    chains, defects = parse_chains(obj, "emo_5.json")
    ems = chains["1"][0].emotions
    assert ems[0].source_ids == ("2", "3") and ems[0].source_raw == "2，3"
    assert ems[1].source_ids == ("1",)  # self = the holder whose chain it is
    assert ems[2].source_ids == () and ems[3].source_ids == ("2",)
    assert chains["2"] == ()
    kinds = [d.kind for d in defects]
    assert kinds.count("label_noise") == 1 and "source_self" in kinds and "source_id" in kinds
    assert any(d.kind == "missing_field" and d.field == "reason" for d in defects)
    assert any(d.kind == "wrong_type" and d.field == "source_id" for d in defects)
    assert any(d.kind == "wrong_type" and "holder 2" in d.message for d in defects)


def test_chains_top_level_must_be_an_object():
    chains, defects = parse_chains([1, 2], "emo_1.json")
    assert chains == {} and defects[0].kind == "wrong_type"
