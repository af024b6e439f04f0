"""The official figures computed one way (issue 54 point 4): `score_subtask`, the report and the job's summary all take
them from the conversations' count columns summed (`figures_from_sums`), not from a second sum of the matrices; the
corpus figures are those of the summed columns."""

from __future__ import annotations

import math

import pytest

from emocaustics.tasks.ecpe import scoring


@pytest.mark.parametrize("subtask", [1, 2])
def test_score_subtask_takes_its_figures_from_the_summed_counts(build, monkeypatch, subtask):
    gold = [build.gold(1, build.texts, build.emotions, [["2_sadness", "1_I lost my job"]]),
            build.gold(2, build.texts, build.emotions, [["3_joy", "3_I got a new one"], ["2_sadness", "1_I lost my job"]])]
    pairs = {1: [["2_sadness", "1_0_4"]], 2: [["3_joy", "2_0_1"]]} if subtask == 1 else \
        {1: [["2_sadness", "1"]], 2: [["3_joy", "2"], ["2_anger", "1"]]}
    pred = [build.pred(c, p) for c, p in pairs.items()]
    if subtask == 2:
        gold = [{**g, "emotion-cause_pairs": [[e, c.split("_")[0]] for e, c in g["emotion-cause_pairs"]]}
                for g in gold]
    seen = []
    real = scoring.figures_from_sums
    monkeypatch.setattr(scoring, "figures_from_sums", lambda sums, st: seen.append(dict(sums)) or real(sums, st))
    result = scoring.score_records(subtask, gold, pred)
    summed: dict[str, int] = {}
    for counts in result.conversations.values():
        for k, v in counts.emotion_counts(subtask).items():
            summed[k] = summed.get(k, 0) + v
    assert seen == [summed]  # one computation, of the conversations' columns
    figures, table = real(summed, subtask)
    assert {k: repr(v) for k, v in result.scores.items()} == {k: repr(v) for k, v in figures.items()}
    assert result.table.equals(table)
    assert any(v > 0 for v in result.scores.values() if not math.isnan(v))
