"""The task on the core's interface: options, scoring rows / summary / tables / items, failures, finalize."""

from __future__ import annotations

import json
import zipfile

import polars as pl
import pytest

from emocaustics.core.task import Failure, Sample, ScoreContext, get_task, needs_model, parse_options
from emocaustics.tasks.ecpe import official as O
from emocaustics.tasks.ecpe.task import EcpeTask

TEXTS = ["I lost my job today .", "Oh no , that is terrible !", "But I got a new one !"]
EMOS = ["neutral", "sadness", "joy"]


def sample(cid: int, s1, s2) -> Sample:
    utts = [{"utterance_ID": i, "speaker": "AB"[i % 2], "text": t} for i, t in enumerate(TEXTS, 1)]
    return Sample(str(cid), {"conversation_ID": cid, "utterances": utts},
                  {"emotions": EMOS, "subtask1": s1, "subtask2": s2})


SAMPLES = [
    sample(1, [["2_sadness", "1_I lost my job"], ["3_joy", "3_I got a new one !"]],
           [["2_sadness", "1"], ["3_joy", "3"]]),
    sample(2, [["3_joy", "3_a new one"]], [["3_joy", "3"]]),
]


def test_registered_and_options():
    task = get_task("ecpe")
    assert isinstance(task, EcpeTask) and task.primary_metric == "weighted_strict_f1"
    assert parse_options(task, {"method": "oracle", "subtask": "2"}).subtasks == (2,)
    assert parse_options(task, {"method": "direct"}).subtasks == (1, 2)
    with pytest.raises(ValueError, match="no method 'window'"):
        parse_options(task, {"method": "window"})
    with pytest.raises(ValueError):
        parse_options(task, {"method": "direct", "subtask": 3})
    assert task.label(parse_options(task, {"method": "utterance", "subtask": 1})) == "ecpe_utterance_subtask=1"
    assert needs_model(task, parse_options(task, {"method": "direct"}))
    assert not needs_model(task, parse_options(task, {"method": "baseline"}))


def test_oracle_scores_and_the_rows_give_back_the_corpus_figures():
    task = EcpeTask()
    opts = parse_options(task, {"method": "oracle"})
    preds = task.predict("oracle", SAMPLES, opts)
    assert preds["1"]["subtask1"] == [["2_sadness", "1_0_4"], ["3_joy", "3_1_6"]]
    scored = task.score(SAMPLES, preds, opts, ScoreContext())
    keys = list(scored.summary)
    assert keys == ["weighted_strict_f1", *[k for k in O.SUBTASK1_KEYS if k != "weighted_strict_f1"],
                    *O.SUBTASK2_KEYS]
    assert all(0.9999999 < v < 1 for v in scored.summary.values())
    rows = scored.rows
    assert set(rows["status"]) == {"ok"}

    def total(metric):
        return rows.filter(rows["metric"] == metric)["value"].sum()
    # 3 gold pairs, all found: strict micro P = 3 / (3 + 1e-8)
    assert total("s1_strict_tp") == 3 and total("s1_strict_fp") == 0 and total("s1_strict_fn") == 0
    assert scored.summary["strict_precision"] == total("s1_strict_tp") / (3 + 1e-8)
    assert scored.summary["Proportional_precision"] == total("s1_prop_overlap") / (total("s1_prop_pred_tokens") + 1e-8)
    assert scored.summary["precision_pair"] == total("s2_tp") / (total("s2_tp") + total("s2_fp") + 1e-8)
    assert set(scored.tables) == {"ecpe_subtask1_per_emotion", "ecpe_subtask2_per_emotion", "ecpe_problems",
                                  "sample_info"}
    table = scored.tables["ecpe_subtask1_per_emotion"]
    joy = table.filter(table["emotion"] == "joy").to_dicts()[0]
    assert (joy["gold_pairs"], joy["correct"], joy["strict_weight"]) == (2, 2, 2 / 3)  # 2 of the 3 gold pairs
    assert scored.items is not None and set(scored.items["outcome"]) == {"correct"}
    assert scored.items.height == 3 + 3


def test_a_failed_conversation_predicts_nothing_and_says_why():
    task = EcpeTask()
    opts = parse_options(task, {"method": "direct", "subtask": 1})
    preds = {"1": {"subtask1": [["2_sadness", "1_0_4"]], "subtask2": [], "span_misses": 2, "unparseable": 0},
             "2": Failure("direct conversation 2", "unparseable answer after 3 attempts")}
    scored = task.score(SAMPLES, preds, opts, ScoreContext())
    failed = scored.rows.filter(scored.rows["sample_id"] == "2")
    assert set(failed["status"]) == {"failed"}
    assert set(failed["reason"]) == {"direct conversation 2: unparseable answer after 3 attempts"}
    fn = failed.filter(failed["metric"] == "s1_strict_fn")["value"].to_list()
    assert fn == [1.0]  # its gold pair counts as missed
    misses = scored.rows.filter(scored.rows["metric"] == "span_misses")["value"].to_list()
    assert misses == [2.0]
    # corpus: 1 correct of 1 predicted, 3 gold -> R = 1 / (3 + 1e-8)
    assert scored.summary["strict_recall"] == 1 / (3 + 1e-8)
    assert list(scored.summary)[0] == "weighted_strict_f1" and "weighted_f1" not in scored.summary


def test_subtask2_only_puts_its_primary_first():
    task = EcpeTask()
    opts = parse_options(task, {"method": "baseline", "subtask": 2})
    scored = task.score(SAMPLES, task.predict("baseline", SAMPLES, opts), opts, ScoreContext())
    assert list(scored.summary) == ["weighted_f1", *[k for k in O.SUBTASK2_KEYS if k != "weighted_f1"]]


def test_finalize_writes_official_files_and_a_zip(tmp_path):
    task = EcpeTask()
    opts = parse_options(task, {"method": "oracle"})
    preds = task.predict("oracle", SAMPLES, opts)
    preds["2"] = Failure("x", "y")
    paths = task.finalize(tmp_path, SAMPLES, preds, opts)
    records = json.loads((tmp_path / "Subtask_1_pred.json").read_text())
    assert [r["conversation_ID"] for r in records] == [1, 2]
    assert records[1]["emotion-cause_pairs"] == []  # failed: present, with no pair
    assert records[0]["conversation"][0] == {"utterance_ID": 1, "speaker": "B", "text": TEXTS[0]}
    archive = tmp_path / "submission.zip"
    assert archive in paths
    with zipfile.ZipFile(archive) as zf:
        assert sorted(zf.namelist()) == ["Subtask_1_pred.json", "Subtask_2_pred.json"]
    # beside them the config's official scores.txt (conversation 2 failed: its gold pair is missed) and the tables
    scored = task.score(SAMPLES, preds, opts, ScoreContext())
    assert (tmp_path / "scores.txt").read_text() == O.scores_txt({k: scored.summary[k] for k in O.SUBTASK1_KEYS}) + \
        O.scores_txt({k: scored.summary[k] for k in O.SUBTASK2_KEYS})
    assert scored.summary["strict_recall"] == 2 / (3 + 1e-8)
    table = pl.read_csv(tmp_path / "per_emotion_subtask1.csv")
    assert table["emotion"].to_list() == list(O.EMOTIONS[1:]) and table["gold_pairs"].sum() == 3
