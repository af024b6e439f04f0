"""Issue 54, point 9: the spec's and the reference's chain scoring are one walk (`chains.score_dialogue_chains`), each
mode's differences fields of `ChainRules` (one instance per mode in `policy`) that the walk reads one by one, and
one row type whose columns each mode writes as its own table had them (so outputs stay the same)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from emocaustics.tasks.longdialogue.data.schema import Dialogue, Emotion, Event, Utterance
from emocaustics.tasks.longdialogue.score import chains
from emocaustics.tasks.longdialogue.score.chains import ChainRules, item_columns, score_dialogue_chains
from emocaustics.tasks.longdialogue.score.plan import score_with_ray
from emocaustics.tasks.longdialogue.score.policy import REFERENCE_CHAINS, SPEC_CHAINS, Policy
from emocaustics.tasks.longdialogue.score.reference import RawPrediction, ReferencePolicy

# the items tables' columns as each mode wrote them before the merge (`ChainItem`'s 26 fields, `RefChainItem`'s 22)
SPEC_COLUMNS = ["holder", "kind", "event_index", "gt_event", "pred_event_index", "pred_event", "event_sim", "judge",
                "event_matched", "unscored", "emotion_index", "gt_state", "gt_reason", "gt_source",
                "pred_emotion_index", "pred_state", "pred_reason", "pred_source", "reason_sim", "reason_ok",
                "state_ok", "source_ok", "points", "max_points", "weight", "contribution"]
REFERENCE_COLUMNS = ["holder", "event_index", "gt_event", "pred_event", "event_sim", "event_judge", "event_matched",
                     "emotion_index", "gt_state", "gt_reason", "gt_source", "pred_emotion_index", "pred_state",
                     "pred_reason", "pred_source", "reason_sim", "reason_judge", "state_score", "source_id_score",
                     "reason_llm_score", "reason_embed_score", "weight"]


def table_sim(pairs: dict[tuple[str, str], float]):
    return lambda a, b: pairs.get((a, b), pairs.get((b, a), 0.0))


def test_each_mode_has_one_rules_instance_read_by_the_one_walk():
    assert Policy().rules == SPEC_CHAINS == ChainRules()
    ref = ReferencePolicy("zero", judge=True).rules
    assert ref == replace(REFERENCE_CHAINS, judge=True)
    assert (ref.published, ref.reuse_events, ref.either_matches, ref.event_threshold) == (True, True, True, 0.3)


def test_each_mode_writes_the_columns_its_table_had():
    assert item_columns(SPEC_CHAINS) == SPEC_COLUMNS
    assert item_columns(REFERENCE_CHAINS) == REFERENCE_COLUMNS
    item = chains.ChainItem("A", event_index=0, gt_event="x", event_judge=1, points=2.0)
    assert chains.item_rows(3, [item], SPEC_CHAINS) == [{"dialogue": 3, **{c: getattr(item, c) for c in SPEC_COLUMNS}}]
    assert list(chains.item_rows(3, [item], REFERENCE_CHAINS)[0]) == ["dialogue", *REFERENCE_COLUMNS]


def test_reuse_events_is_its_own_rule():
    # x takes px; y (closer still) finds it used under the spec, takes it again with reuse_events
    gt = {"A": (Event("x", ()), Event("y", ()))}
    pred = {"A": (Event("px", ()),)}
    sim = table_sim({("x", "px"): 0.9, ("y", "px"): 0.95})
    assert [r.event_matched for r in score_dialogue_chains(gt, pred, sim).items] == [True, False]
    again = score_dialogue_chains(gt, pred, sim, rules=replace(SPEC_CHAINS, reuse_events=True))
    assert [(r.pred_event_index, r.event_matched) for r in again.items] == [(0, True), (0, True)]


def test_either_matches_is_its_own_rule():
    # below the event threshold the spec neither asks nor matches; with either_matches the judge is asked and its
    # "same" matches the event on its own
    gt = {"A": (Event("x", ()),)}
    pred = {"A": (Event("px", ()),)}
    sim = table_sim({("x", "px"): 0.5})
    spec = replace(SPEC_CHAINS, judge=True)
    assert score_dialogue_chains(gt, pred, sim, {}, spec).items[0].event_matched is False
    either = replace(spec, either_matches=True)
    assert score_dialogue_chains(gt, pred, sim, {}, either).missing == {("x", "px")}
    out = score_dialogue_chains(gt, pred, sim, {("x", "px"): True}, either)
    assert out.items[0].event_matched is True and out.score == 1.0
    assert score_dialogue_chains(gt, pred, sim, {("x", "px"): False}, either).items[0].event_matched is False


class WordEmbedder:
    """Each distinct text on its own axis: identical texts have cosine 1, others 0."""

    name = "word-axes"

    def __init__(self) -> None:
        self.axes: dict[str, int] = {}

    async def embed(self, texts):
        out = np.zeros((len(texts), 32), dtype=np.float32)
        for i, t in enumerate(texts):
            out[i, self.axes.setdefault(t, len(self.axes))] = 1.0
        return out


def test_both_modes_score_one_dialogue_through_the_one_walk_with_their_own_columns():
    gt = {"1": (Event("吵架", (Emotion("negative", "被骂", ("2",), "2"),)), Event("和好", ())), "2": ()}
    d = Dialogue(id=5, utterances=(Utterance(0, "x", "1"),), chat_files=("chat_5.json",), chains=gt)
    pred = {"1": (Event("吵架", (Emotion("negative", "被骂", ("2",), "2"),)),)}
    spec = score_with_ray("emotion", [d], {5: pred}, embedder=WordEmbedder(), ray=False)
    assert spec.items.columns == ["dialogue", *SPEC_COLUMNS]
    # holder 1: 吵架 matched with 2 of 2 points, 和好 unmatched -> 0.5; holder 2: nothing either side -> 1
    assert spec.summary["score"] == 0.75 and spec.items["kind"].to_list() == ["emotion", "event", "holder"]
    raw = RawPrediction({"1": {"events": [{"event": "吵架", "emotions": [
        {"state": "negative", "reason": "被骂", "source_id": 2}]}]}}, "output_emotions_5.json")
    ref = score_with_ray("emotion", [d], {5: raw}, embedder=WordEmbedder(), compat="reference", ray=False)
    assert ref.items.columns == ["dialogue", *REFERENCE_COLUMNS]
    # holder 1's events are worth 1/2 each; 吵架's one emotion scores state and source; 和好 finds no cosine above 0
    row = ref.dialogues.row(0, named=True)
    assert (row["c_total_state_score_percentage"], row["c_total_source_id_score_percentage"]) == (50.0, 50.0)
    assert ref.items["weight"].to_list() == [0.5, 0.0]
