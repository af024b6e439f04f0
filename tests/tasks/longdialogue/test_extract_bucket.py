"""Event-bucket update rules, running-log descriptions and the bounded rendering."""

import numpy as np

from emocaustics.tasks.longdialogue.extract.bucket import EventBucket
from extract_doubles import unit_vectors


def test_llm_choice_joins_existing_event():
    b = EventBucket(threshold=0.9)
    emb = unit_vectors([0, 1])
    assert b.update(0, "1", -1, "口服液争执", "1说口服液是欺诈", emb).rule == "new"
    d = b.update(1, "2", 0, "别的名字", "2反驳", emb)  # orthogonal embedding, but the LLM says event 0
    assert (d.rule, d.event_id) == ("llm", 0)
    ev = b.events[0]
    assert ev.sentence_ids == [0, 1] and ev.holders == ["1", "2"]
    assert ev.description == "[0] 1说口服液是欺诈\n[1] 2反驳"  # a log, one line per utterance


def test_same_name_counts_as_llm_saying_same_event():
    b = EventBucket()
    b.update(0, "1", -1, "孩子 上学", "a", None)
    assert b.update(1, "1", -1, "孩子上学", "b", None).rule == "llm-name"
    assert len(b.events) == 1


def test_embedding_similarity_joins_at_threshold_else_new_event():
    emb = unit_vectors([0, 1, 0, 2])
    b = EventBucket(threshold=0.8)
    b.update(0, "1", -1, "甲", "a", emb)
    b.update(1, "2", -1, "乙", "b", emb)
    d = b.update(2, "1", -1, "丙", "c", emb)  # identical vector to utterance 0
    assert (d.rule, d.event_id) == ("embedding", 0)
    d = b.update(3, "2", -1, "丁", "d", emb)  # orthogonal to everything
    assert (d.rule, d.event_id) == ("new", 2)
    assert [e.event for e in b.events] == ["甲", "乙", "丁"]


def test_embedding_below_threshold_opens_new_event():
    emb = np.array([[1, 0], [0.6, 0.8]], np.float32)  # cosine 0.6
    b = EventBucket(threshold=0.7)
    b.update(0, "1", -1, "甲", "a", emb)
    assert b.update(1, "1", -1, "乙", "b", emb).rule == "new"
    b2 = EventBucket(threshold=0.6)
    b2.update(0, "1", -1, "甲", "a", emb)
    assert b2.update(1, "1", -1, "乙", "b", emb).rule == "embedding"


def test_new_event_without_name_gets_a_placeholder():
    b = EventBucket()
    b.update(0, "1", -1, "  ", "a", None)
    assert b.events[0].event == "事件1"


def test_rendering_is_bounded():
    b = EventBucket()
    for j in range(40):
        b.update(j, str(j % 3), -1, f"事件名{j // 4}", f"记录{j}", None)  # 10 events of 4 utterances each
    text = b.render(max_events=3, max_log_lines=2)
    assert "另有 7 个较早的事件未列出" in text
    assert [e.id for e in b.on_show(3)] == [7, 8, 9]  # the most recently active
    assert "记录39" in text and "记录38" in text and "记录37" not in text
    assert text.count("省略 2 条较早记录") == 3
    long = b.render(max_events=100, max_log_lines=100)
    assert len(text) < len(long) / 2


def test_needs_embeddings_is_exactly_when_decide_would_read_them():
    """The window pass awaits a dialogue's rows only on `needs_embeddings`: it must agree with `decide`'s rule 3."""
    b = EventBucket()
    assert not b.needs_embeddings(-1, "anything")  # no event to join
    b.update(0, "1", -1, "孩子 上学", "a", None)
    b.update(1, "2", -1, "口服液", "b", None)
    for eid, name in [(0, ""), (1, "x"), (2, ""), (-1, ""), (-1, "孩子上学"), (-1, " 口服液 "), (-1, "新事件"),
                      (5, "口服液"), (-1, "孩子")]:
        reads = b.decide(2, eid, name, None).rule == "new"  # without rows, rule 3 cannot join: it falls to "new"
        assert b.needs_embeddings(eid, name) == reads, (eid, name)
