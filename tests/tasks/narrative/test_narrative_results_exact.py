"""Whole component results by exact value (issue 29): characters, events, actions, the GT-missing helpers and the
counts -> score functions, each on a worked example, so that a renamed key, a lost reason or a changed count is seen."""

import pytest
from tasks.narrative.evaluators import align_events, evaluate_actions
from tasks.narrative.narrative_builders import SIX, act, ch, close, doc, ev, story

from emocaustics.tasks.narrative import actions, alignment, characters
from emocaustics.tasks.narrative.alignment import evaluate_events
from emocaustics.tasks.narrative.characters import evaluate_characters
from emocaustics.tasks.narrative.gtmissing import Outcome, Tally, unscored

CHARACTER_METRICS = {"precision": None, "recall": None, "f1": None, "archetype_accuracy": None}


def chars(pred, gt):
    return evaluate_characters(story(doc(characters=pred)), story(doc(characters=gt)))


def test_characters_whole_result():
    gt = [ch("A", None, "hero"), ch(None, ["Bee", "B2"], "mentor"), ch("C", None, "ally"), ch("", [], "hero")]
    pred = [ch("A", None, "hero"), ch("Bee", None, None), ch("C", None, "villain"), ch("D", None, "sage")]
    # GT character 3 has no name or alias: skipped. Pairs A-A (name = name), Bee-(alias Bee), C-C; D unmatched.
    # tp 3, fp 1, fn 0: P 3/4, R 1, F1 = 2 * 3/4 / (7/4) = 6/7. Archetypes: A right; Bee predicted empty -> missing
    # (wrong); C ally vs villain -> wrong: 1 of 3. Score (6/7 + 1/3) / 2 = 25/42.
    assert close(chars(pred, gt), {
        "component": "characters", "score": 25 / 42, "gt_incomplete": True,
        "reason": "1 GT character(s) without name or alias skipped", "skipped_events": 0,
        "metrics": {"precision": 0.75, "recall": 1.0, "f1": 6 / 7, "archetype_accuracy": 1 / 3, "archetype_extra": 0,
                    "gt_characters": 3, "pred_characters": 4},
        "counts": {"tp": 3, "fp": 1, "fn": 0, "archetype_correct": 1, "archetype_total": 3},
        "extra": ["D"], "missing": [],
        "details": [{"gt": "A", "pred": "A", "archetype": "compared", "archetype_correct": True},
                    {"gt": "Bee", "pred": "Bee", "archetype": "missing", "archetype_correct": False},
                    {"gt": "C", "pred": "C", "archetype": "compared", "archetype_correct": False}],
        "event_ok": {}})


def test_characters_one_gt_archetype_missing_makes_the_result_gt_incomplete():
    # GT archetype empty, predicted "hero": extra (not judged); F1 1, no archetype accuracy -> score 1
    assert chars([ch("A", None, "hero")], [ch("A", None, None)]) == {
        "component": "characters", "score": 1.0, "gt_incomplete": True, "reason": None, "skipped_events": 0,
        "metrics": {"precision": 1.0, "recall": 1.0, "f1": 1.0, "archetype_accuracy": None, "archetype_extra": 1,
                    "gt_characters": 1, "pred_characters": 1},
        "counts": {"tp": 1, "fp": 0, "fn": 0, "archetype_correct": 0, "archetype_total": 0},
        "extra": [], "missing": [],
        "details": [{"gt": "A", "pred": "A", "archetype": "extra", "archetype_correct": None}], "event_ok": {}}


@pytest.mark.parametrize("gt, reason", [([], "ground truth lists no characters"),
                                        ([ch("", [])], "no ground-truth character has a name or alias")])
def test_characters_unscored_whole_result(gt, reason):
    # predicted characters are listed by name, else first alias, else "?"
    assert chars([ch("", []), ch(None, ["Zed", "Z2"])], gt) == {
        "component": "characters", "score": None, "gt_incomplete": True, "reason": reason, "skipped_events": 0,
        "metrics": CHARACTER_METRICS, "counts": {}, "extra": ["?", "Zed"], "missing": [], "details": [],
        "event_ok": {}}


def test_events_whole_result():
    gt = [ev("g1", 0, 10), ev("g2", agents=["A"], targets=["B"], action=act(type_="give")), ev("g3", 30, 40)]
    pred = [ev("p1", 0, 20), ev("p2", agents=["A"], action=act(type_="take")), ev("p3", 20, 30)]
    # p1-g1 by span: IoU 10/20 = 0.5; p2-g2 by participants (g2 has no span): J({A}, {A, B}) = 1/2, other type ->
    # 0.5 * 1/2 = 0.25; p3 shares nothing with g3 (IoU 0): p3 extra, g3 missed. Recall 2/3.
    p, g = story(doc("x" * 40, [], pred)), story(doc("x" * 40, [], gt))
    assert close(evaluate_events(p, g, align_events(p, g, "x" * 40)), {
        "component": "events", "score": 2 / 3, "gt_incomplete": True,
        "reason": "1 predicted event(s) absent from GT listed as extra", "skipped_events": 0,
        "metrics": {"recall": 2 / 3, "aligned": 2, "missed": 1, "extra": 1, "by_span": 1, "by_fallback": 1,
                    "mean_span_iou": 0.5},
        "counts": {"aligned": 2, "gt_events": 3}, "extra": ["p3"], "missing": ["g3"],
        "details": [{"pred": "p1", "gt": "g1", "weight": 0.5, "basis": "span"},
                    {"pred": "p2", "gt": "g2", "weight": 0.25, "basis": "fallback"}],
        "event_ok": {"0": True, "1": True, "2": False}})


def test_events_unscored_whole_result():
    p, g = story(doc("x" * 40, [], [ev("p1", 0, 10), ev("p2")])), story(doc("x" * 40, [], []))
    assert evaluate_events(p, g, align_events(p, g, "x" * 40)) == {
        "component": "events", "score": None, "gt_incomplete": True, "reason": "ground truth has no narrative events",
        "skipped_events": 2, "metrics": {"recall": None, "aligned": None, "missed": None, "extra": None},
        "counts": {}, "extra": ["p1", "p2"], "missing": [], "details": [], "event_ok": {}}


def test_unscored_and_tally_json_by_value():
    assert unscored("spans", "no text", 3, extra=["p1"], metrics=("b",)) == {
        "component": "spans", "score": None, "gt_incomplete": True, "reason": "no text", "skipped_events": 3,
        "metrics": {"b": None}, "counts": {}, "extra": ["p1"], "missing": [], "details": [], "event_ok": {}}
    t = Tally()
    for outcome, right in ((Outcome.COMPARED, True), (Outcome.COMPARED, False), (Outcome.MISSING, False),
                           (Outcome.EXTRA, False), (Outcome.EXTRA, False), (Outcome.BOTH_EMPTY, False)):
        t.add(outcome, right)
    assert t.to_json() == {"correct": 1, "compared": 2, "missing": 1, "extra": 2, "both_empty": 1}


def test_scores_from_counts_read_absent_counts_as_zero():
    # actions: 0 correct of 2 -> 0; nothing in the denominator -> not measured
    assert actions.score_from_counts({"total": 2}) == 0.0 and actions.score_from_counts({"correct": 1}) is None
    # events: 0 aligned of 2 -> 0
    assert alignment.score_from_counts({"gt_events": 2}) == 0.0 and alignment.score_from_counts({"aligned": 1}) is None
    # characters: fp 1 only -> P 0, R 0, F1 0 (no archetypes) = 0; tp 1 only -> F1 1
    assert characters.score_from_counts({"fp": 1}) == 0.0 and characters.score_from_counts({"tp": 1}) == 1.0
    # tp 1, fn 1 (fp absent) -> P 1, R 1/2, F1 2/3; tp 1, fp 1 (fn absent) -> the same 2/3
    assert characters.score_from_counts({"tp": 1, "fn": 1}) == pytest.approx(2 / 3)
    assert characters.score_from_counts({"tp": 1, "fp": 1}) == pytest.approx(2 / 3)


def test_actions_whole_result():
    gt = [ev("e1", 0, 6, action=act("physical", "give", "home", "completed", "climax")),
          ev("e2", 6, 12, action=act("verbal", "", None, "attempted", "crisis")),
          ev("e3", 12, 18, action=None), ev("e4", agents=["Q"], action=act("mental"))]
    pred = [ev("p1", 0, 6, action=act("physical", "take", "office", "failed", None)),
            ev("p2", 6, 12, action=act("verbal", "ask", "market", "attempted", "crisis")),
            ev("p3", 12, 18, action=act("mental", "think")), ev("p4", agents=["Z"], action=act("social"))]
    # e1 (p1): category right, type/context/status wrong, function missing: 1 of 5 -> partial.
    # e2 (p2): type and context empty in GT -> extra; category, status, function right: 3 of 3 -> complete.
    # e3: no GT action layer -> skipped, p3's fields extra (under the GT event's name). e4: not aligned -> category
    # missing: 0 of 1, neither. p4 (extra event): its field listed. Fields right 1+3+0 = 4 of 5+3+1 = 9.
    # Per field: category 2 of 3; type 0 of 1; context 0 of 1; status 1 of 2; function 1 of 2 (e1's missing).
    # GT-empty fields in scored events: type 2 (e2 extra, e4 both), context 2, status 1, function 1 = 6.
    r = evaluate_actions(story(doc(SIX, [], pred)), story(doc(SIX, [], gt)))
    assert close(r, {
        "component": "actions", "score": 4 / 9, "gt_incomplete": True,
        "reason": "1 GT event(s) without an action layer skipped; 6 GT field(s) empty in scored events",
        "skipped_events": 1,
        "metrics": {"field_accuracy": 4 / 9, "complete_match_rate": 1 / 3, "partial_match_rate": 1 / 3,
                    "category_accuracy": 2 / 3, "type_accuracy": 0.0, "context_accuracy": 0.0,
                    "status_accuracy": 0.5, "function_accuracy": 0.5},
        "counts": {"correct": 4, "total": 9, "events_scored": 3, "complete": 1},
        "extra": ["e2.type=ask", "e2.context=market", "e3.category=mental", "e3.type=think", "p4.category=social"],
        "missing": ["e1.type", "e1.context", "e1.status", "e1.function", "e4.category"],
        "details": {"events": [{"event": "e1", "aligned": True, "category": "correct", "type": "wrong",
                                "context": "wrong", "status": "wrong", "function": "missing"},
                               {"event": "e2", "aligned": True, "category": "correct", "status": "correct",
                                "function": "correct"},
                               {"event": "e4", "aligned": False, "category": "missing"}],
                    "fields": {"category": {"correct": 2, "compared": 2, "missing": 1, "extra": 0, "both_empty": 0},
                               "type": {"correct": 0, "compared": 1, "missing": 0, "extra": 1, "both_empty": 1},
                               "context": {"correct": 0, "compared": 1, "missing": 0, "extra": 1, "both_empty": 1},
                               "status": {"correct": 1, "compared": 2, "missing": 0, "extra": 0, "both_empty": 1},
                               "function": {"correct": 1, "compared": 1, "missing": 1, "extra": 0,
                                            "both_empty": 1}}},
        "event_ok": {"0": False, "1": True, "3": False}})


def test_actions_unscored_whole_result():
    r = evaluate_actions(story(doc("x" * 40, [], [ev("p1", 0, 6, action=act("verbal"))])),
                                 story(doc("x" * 40, [], [ev("e1", 0, 6, action={})])))
    assert r == {"component": "actions", "score": None, "gt_incomplete": True,
                 "reason": "no ground-truth event has an action-layer field", "skipped_events": 1,
                 "metrics": {m: None for m in actions.METRICS}, "counts": {}, "extra": ["e1.category=verbal"],
                 "missing": [], "details": [], "event_ok": {}}


def test_actions_align_with_the_given_resolver_and_the_gt_text():
    full = act("physical", "give", "home", "completed", "climax")
    pred = story(doc(None, [], [ev("p1", agents=["Tom"], action=full)]))
    gt = story(doc(None, [], [ev("e1", agents=["Tom Hale"], action=full)]))
    # neither story lists characters: only the resolver passed in knows Tom is Tom Hale, so the events align (5 of 5)
    resolve = characters.Resolver(story(doc(characters=[ch("Tom Hale", ["Tom"])])).characters, [])
    assert evaluate_actions(pred, gt, resolve=resolve)["score"] == 1.0
    assert evaluate_actions(pred, gt)["score"] == 0.0
    # the prediction has no text: spans are placed in the GT's, so p1 = e1 by span
    p = story(doc(None, [], [ev("p1", 0, 6, action=full)]))
    assert evaluate_actions(p, story(doc("x" * 40, [], [ev("e1", 0, 6, action=full)])))["score"] == 1.0


def test_events_mean_span_iou_and_no_reason_without_extra():
    # IoU [0,10)-[0,20) = 1/2 and [20,40)-[20,40) = 1: mean 3/4; nothing extra: complete, no reason
    p, g = story(doc("x" * 40, [], [ev("p1", 0, 20), ev("p2", 20, 40)])), \
        story(doc("x" * 40, [], [ev("g1", 0, 10), ev("g2", 20, 40)]))
    r = evaluate_events(p, g, align_events(p, g, "x" * 40))
    assert r["metrics"]["mean_span_iou"] == 0.75 and r["reason"] is None and r["gt_incomplete"] is False


def test_iou_of_touching_short_and_empty_ranges():
    assert alignment.iou((0, 2), (1, 3)) == pytest.approx(1 / 3)  # 1 shared of 3
    assert alignment.iou((0, 3), (3, 6)) == 0.0 and alignment.iou((2, 2), (2, 2)) == 0.0


def test_events_weight_rounded_to_four_places_and_unnamed_events_by_index():
    # IoU [0,10)-[5,35) = 5 / 35 = 1/7 = 0.142857...; the GT event without id is named by its index
    p, g = story(doc("x" * 40, [], [ev("p1", 0, 10)])), story(doc("x" * 40, [], [ev("g1", 5, 35), ev(None, 36, 40)]))
    r = evaluate_events(p, g, align_events(p, g, "x" * 40))
    assert r["details"] == [{"pred": "p1", "gt": "g1", "weight": 0.1429, "basis": "span"}] and r["missing"] == ["#1"]


def test_pair_weight_without_shared_participants_is_fallback_zero():
    p, g = story(doc(None, [], [ev("p1", agents=["A"])])), story(doc(None, [], [ev("g1", agents=["B"])]))
    resolve = characters.Resolver([], [])
    assert alignment.pair_weight(p.events[0], g.events[0], None, resolve) == (0.0, "fallback")


def test_ties_follow_story_position_when_counts_differ():
    # 2 predicted and 4 GT events, all alike: p1 is half-way through the prediction, so it takes g3 (half-way
    # through the GT), not g2
    p = story(doc(None, [], [ev("p1", agents=["A"]), ev("p2", agents=["A"])]))
    g = story(doc(None, [], [ev(f"g{k}", agents=["A"]) for k in range(1, 5)]))
    assert align_events(p, g, None).pairs == [(0, 0, 0.5, "fallback"), (1, 2, 0.5, "fallback")]


def test_tally_counts_every_repeat_and_defaults_to_wrong():
    t = Tally()
    for outcome in (Outcome.MISSING, Outcome.MISSING, Outcome.BOTH_EMPTY, Outcome.BOTH_EMPTY, Outcome.COMPARED):
        t.add(outcome)
    assert t.to_json() == {"correct": 0, "compared": 1, "missing": 2, "extra": 0, "both_empty": 2}


def test_actions_reason_names_only_what_happened():
    full = act("physical", "give", "home", "completed", "climax")
    r = evaluate_actions(story(doc(SIX, [], [ev("e1", 0, 6, action=full)])),
                                 story(doc(SIX, [], [ev("e1", 0, 6, action=full), ev("e2", 6, 12)])))
    assert r["reason"] == "1 GT event(s) without an action layer skipped"
    r = evaluate_actions(story(doc(SIX, [], [ev("e1", 0, 6, action=act("verbal"))])),
                                 story(doc(SIX, [], [ev("e1", 0, 6, action=act("verbal"))])))
    assert r["reason"] == "4 GT field(s) empty in scored events"  # type, context, status, function


# Spans for the two exact-tie stories below (text "x" * 40): X = [0, 4), Y = [2, 4), H = [0, 2) and two far spans.
# IoU(X, X) = 1, IoU(X, H) = 2/4 = 0.5, IoU(Y, X) = 2/4 = 0.5, IoU(Y, H) = 0 (they only touch); the far spans meet
# nothing. So "X-X alone" (total 1) ties exactly with "X-H plus Y-X" (0.5 + 0.5 = 1, exact in binary floats) and only
# the tie-break TIE_BREAK * closeness decides, closeness = 1 - |i/n - j/m| over the positive pairs only.
_SPANS_P = {"X": (0, 4), "F": (10, 12), "Y": (2, 4)}
_SPANS_G = {"X": (0, 4), "F": (20, 22), "H": (0, 2)}


def _tie(pred_order, gt_order):
    p = story(doc(events=[ev(f"p{k}", *_SPANS_P[c]) for k, c in enumerate(pred_order)]))
    g = story(doc(events=[ev(f"g{k}", *_SPANS_G[c]) for k, c in enumerate(gt_order)]))
    a = align_events(p, g, "x" * 40)
    return a.pairs, a.extra, a.missed


def test_exact_tie_one_close_pair_beats_two_far_pairs():
    # pred X F Y, GT X F H (n = m = 3). One pair p0-g0: closeness 1 - |0 - 0| = 1. Two pairs p0-g2, p2-g0: closeness
    # (1 - 2/3) + (1 - 2/3) = 2/3 < 1, so the single pair wins. (Counting 1 extra per pair, 2 - d, would give
    # 2 against 2 * 4/3 = 8/3 and take the two far pairs: the closeness counts position only, not the pair count.)
    assert _tie("XFY", "XFH") == ([(0, 0, 1.0, "span")], [1, 2], [1, 2])


def test_exact_tie_break_ignores_the_zero_pairs_that_fill_the_assignment():
    # pred F X Y, GT X F H. One pair p1-g0: closeness 1 - |1/3 - 0| = 2/3. Two pairs p1-g2, p2-g0: (1 - |1/3 - 2/3|)
    # + (1 - |2/3 - 0|) = 2/3 + 1/3 = 1 > 2/3: the two pairs win. The weight-0 pairs the solver adds to fill the
    # square must not count: with them, p1-g0 + p0-g1 + p2-g2 = 2/3 + 2/3 + 1 = 7/3 would beat p1-g2 + p2-g0 + p0-g1
    # = 2/3 + 1/3 + 2/3 = 5/3 and leave one pair where two fit.
    assert _tie("FXY", "XFH") == ([(1, 2, 0.5, "span"), (2, 0, 0.5, "span")], [0], [1])


def test_two_alias_pairs_beat_one_name_pair_in_either_order():
    # pred 0 "Zed" (alias Ann), pred 1 "Ann" (alias Bo); GT 0 "Ann", GT 1 "Bo". Possible: {pred1-GT0} (1 pair, a name
    # pair) or {pred0-GT0, pred1-GT1} (2 pairs, both by alias). The most pairs win: 2 (each pair is worth
    # min(2, 2) + 1 = 3, a name match 1 more: 3 + 3 = 6 > 3 + 1 = 4). With a name pair weighted 2 and an alias pair 1
    # the two were an exact tie (2 = 1 + 1) that scipy settled by list order: the reversed lists got the single pair.
    pred = story(doc(characters=[ch("Zed", ["Ann"]), ch("Ann", ["Bo"])])).characters
    gt = story(doc(characters=[ch("Ann"), ch("Bo")])).characters
    assert characters.match_characters(pred, gt) == [(0, 0), (1, 1)]
    assert characters.match_characters(pred[::-1], gt[::-1]) == [(0, 0), (1, 1)]  # the same pairs, indices mirrored
    assert characters.match_characters(pred[::-1], gt) == [(0, 1), (1, 0)]


def test_among_equally_many_pairs_name_pairs_win_and_list_order_does_not_matter():
    # pred "Ann" (alias Bo), "Bo" (alias Ann); GT "Ann", "Bo": both assignments have 2 pairs; straight = 2 name pairs
    # (3 + 1 + 3 + 1 = 8), crossed = 2 alias pairs (3 + 3 = 6): the straight one, in every order of either list.
    pred = story(doc(characters=[ch("Ann", ["Bo"]), ch("Bo", ["Ann"])])).characters
    gt = story(doc(characters=[ch("Ann"), ch("Bo")])).characters
    for p, g in ((pred, gt), (pred[::-1], gt), (pred, gt[::-1]), (pred[::-1], gt[::-1])):
        got = {(p[i].name, g[j].name) for i, j in characters.match_characters(p, g)}
        assert got == {("Ann", "Ann"), ("Bo", "Bo")}
