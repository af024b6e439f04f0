"""On the organisers' published files (EMOCAUSTICS_ECAC_DATA or ../shared/datasets/ecac; skipped when absent).

The pinned figures were produced by our scorer and are bit-identical to the organisers' evaluate.py on the same
files (checked once, outside the repository: their script is GPL and not vendored; see datasets/ecpe/README.md)."""

from __future__ import annotations

import argparse
import json
import shutil

import pytest

from emocaustics.core.errors import UsageError
from emocaustics.core.task import ScoreContext, parse_options
from emocaustics.core.textfile import read_json
from emocaustics.tasks.ecpe import cli, data
from emocaustics.tasks.ecpe.task import EcpeTask
from emocaustics.tasks.ecpe.validate import check_prediction

ORACLE_SCORES_TXT = """\
weighted_strict_precision:0.9999999999734042
weighted_strict_recall:0.9999999999734042
weighted_strict_f1:0.9999999949734042
weighted_Proportional_precision:0.9999999999964118
weighted_Proportional_recall:0.9999999999964118
weighted_Proportional_f1:0.9999999949964118
strict_precision:0.9999999999955674
strict_recall:0.9999999999955674
strict_f1:0.9999999949955674
Proportional_precision:0.9999999999993882
Proportional_recall:0.9999999999993882
Proportional_f1:0.9999999949993881
precision_pair:0.9999999999959382
recall_pair:0.9999999999959382
f1_pair:0.9999999949959382
weighted_precision:0.9999999999756295
weighted_recall:0.9999999999756295
weighted_f1:0.9999999949756295
"""


def score_cli(pred_dir, gold_dir, *extra) -> None:
    p = argparse.ArgumentParser()
    cli.register_score(p.add_subparsers(dest="t"))
    args = p.parse_args(["ecpe", "--pred", str(pred_dir), "--gold", str(gold_dir), *extra])
    assert args.func(args) == 0


@pytest.fixture(scope="module")
def loaded(ecac_root):
    return data.load(ecac_root)


def test_the_test_set_as_published(loaded):
    s = loaded.samples
    assert len(s) == 341 and sum(len(x.input["utterances"]) for x in s) == 3101
    assert sum(len(x.target["subtask1"]) for x in s) == 2256 and sum(len(x.target["subtask2"]) for x in s) == 2462
    assert all("emotion" not in u for x in s for u in x.input["utterances"])
    assert [(d.kind, d.where.split(": ", 1)[1]) for d in loaded.defects] == [
        ("span_not_found", "conversation 1821, pair 4")]
    assert loaded.info["future_cause_pairs_subtask1"] == 77  # causes after their emotion utterance


def test_oracle_prints_every_official_key_at_0_99999999(loaded, ecac_root, tmp_path, capsys):
    task = EcpeTask()
    opts = parse_options(task, {"method": "oracle"})
    preds = task.predict("oracle", loaded.samples, opts)
    task.finalize(tmp_path, loaded.samples, preds, opts)
    score_cli(tmp_path, ecac_root)
    out = capsys.readouterr().out
    assert out == ORACLE_SCORES_TXT
    assert all(line.split(":")[1].startswith("0.99999999") for line in out.splitlines())
    scored = task.score(loaded.samples, preds, opts, ScoreContext())
    assert {k: repr(v) for k, v in scored.summary.items()} == dict(line.split(":") for line in out.splitlines())


def test_baseline_figures(loaded):
    task = EcpeTask()
    opts = parse_options(task, {"method": "baseline"})
    summary = task.score(loaded.samples, task.predict("baseline", loaded.samples, opts), opts, ScoreContext()).summary
    assert summary["weighted_strict_f1"] == 0.03732510420379135
    assert summary["Proportional_f1"] == 0.14979666158303215
    assert summary["weighted_f1"] == 0.10318980378115936


def _gold_from(records, subtask):
    """A gold file made from a submission itself: spans back to text, utterances labelled by their pairs."""
    gold = []
    for rec in records:
        utts = [dict(u) for u in rec["conversation"]]
        for u in utts:
            u["emotion"] = "neutral"
        pairs = []
        for e, c in rec["emotion-cause_pairs"]:
            eu, emo = e.split("_")
            utts[int(eu) - 1]["emotion"] = emo
            if subtask == 1:
                cu, s, t = map(int, c.split("_"))
                c = f"{cu}_{' '.join(utts[cu - 1]['text'].split()[s:t])}"
            pairs.append([e, c])
        gold.append({**rec, "conversation": utts, "emotion-cause_pairs": pairs})
    return gold


def test_the_organisers_sample_submission(ecac_root, tmp_path, capsys):
    sub = ecac_root / "sample_submission"
    for st in (1, 2):
        checked = check_prediction(read_json(sub / f"Subtask_{st}_pred.json"), st, "sample")
        assert checked.problems == []
    # it covers conversations 1-5 and 12 (training data), none of the test set: it pairs with no test conversation,
    # an error for each file (the official scorer stops too: "Conversation 1375 are missing!")
    with pytest.raises(UsageError, match="2 error\\(s\\) in .*nothing scored"):
        score_cli(sub, ecac_root)
    err = capsys.readouterr().err
    assert all(f"Subtask_{st}_pred.json: pairs with no gold conversation" in err for st in (1, 2))
    assert "(6 conversation(s) in the file, none of them in the gold)" in err
    gold = tmp_path / "gold"
    gold.mkdir()
    for st in (1, 2):
        (gold / f"Subtask_{st}_gold.json").write_text(json.dumps(_gold_from(read_json(sub / f"Subtask_{st}_pred.json"),
                                                                             st)))
    shutil.copytree(sub, tmp_path / "pred")
    score_cli(tmp_path / "pred", gold, "--json")
    doc = json.loads(capsys.readouterr().out)
    assert doc["f1_pair"] == pytest.approx(1, abs=1e-8)  # subtask 2 pairs are their own gold
    assert 0 < doc["weighted_strict_f1"] < 1  # spans re-read by the gold rule: trailing punctuation tokens go
