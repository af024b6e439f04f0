"""`emocaustics score` from the command line: bad input, oracle = 1.0 and baseline below it on paper-100 (published
data), --out files, and prediction folders."""

from __future__ import annotations

import json
import os
from pathlib import Path

import polars as pl
import pytest

from emocaustics.cli import main

DATA = os.environ.get("EMOCAUSTICS_DATA") or str(Path(__file__).resolve().parents[4] / "shared/datasets/emocaustics")
published = pytest.mark.skipif(not Path(DATA, "chat").is_dir(), reason="published data not available")


def run_json(capsys, *argv: str) -> dict:
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


def test_bad_embedder_spec_is_exit_2(capsys):
    assert main(["score", "sextuple", "--pred", "oracle", "--embedder", "openai:nourl"]) == 2
    assert "openai:MODEL@BASE_URL" in capsys.readouterr().err


@published
@pytest.mark.published
@pytest.mark.slow
def test_oracle_and_baseline_on_paper_100(capsys, tmp_path):
    common = ["--gt", DATA, "--subset", "paper-100", "--judge", "none", "--engine", "local", "--json"]
    for task in ("sextuple", "emotion"):
        oracle = run_json(capsys, "score", task, "--pred", "oracle", *common, "--out", str(tmp_path / task))
        assert oracle["score"] == 1.0 and oracle["micro_score"] == 1.0 and oracle["failures"] == [], task
        assert set(oracle) >= {"task", "dialogues", "score", "micro_score", "components", "per_dialogue", "failures"}
        assert oracle["dialogues"] == 100 and len(oracle["per_dialogue"]) == 100
        base = run_json(capsys, "score", task, "--pred", "baseline", *common, "--ids", "1,2,3,4,5")
        assert base["score"] < 0.5, task
        d = pl.read_parquet(tmp_path / task / "dialogues.parquet")
        assert d.height == 100 and d["score"].min() == 1.0
        assert (tmp_path / task / "items.parquet").exists() and (tmp_path / task / "summary.csv").exists()


@published
@pytest.mark.published
def test_prediction_folder_with_missing_and_malformed(capsys, tmp_path):
    from emocaustics.tasks.longdialogue.data.subsets import resolve
    from tests.fakes.sextuple_files import write_candidates
    from emocaustics.tasks.longdialogue.score.predictors import predict

    ds, _ = resolve("paper-100", [1, 2, 3], root=DATA)
    preds = predict("oracle", "sextuple", ds)
    d1 = ds[0]
    write_candidates(tmp_path, 1, d1, preds[1])
    (tmp_path / "output_chat_2.json").write_text("[{", encoding="utf-8")
    out = run_json(capsys, "score", "sextuple", "--pred", str(tmp_path), "--gt", DATA, "--subset", "paper-100",
                   "--ids", "1,2,3", "--engine", "local", "--json", "--allow-failures")  # 2 of 3 fail: exit 3 without
    assert out["per_dialogue"] == {"1": 1.0, "2": 0.0, "3": 0.0}
    reasons = {f["dialogue"]: f["reason"] for f in out["failures"]}
    assert "output_chat_2.json" in reasons[2] and reasons[3] == "missing prediction"


def _oracle_folder(task: str, folder: Path, ids: list[int]) -> None:
    """Oracle prediction files for some of the repo's sample dialogues."""
    from emocaustics.tasks.longdialogue.data.subsets import resolve
    from emocaustics.tasks.longdialogue.score.predictions import write_chain_predictions
    from tests.fakes.sextuple_files import write_candidates
    from emocaustics.tasks.longdialogue.score.predictors import predict

    dialogues, _ = resolve("sample", None)
    preds = predict("oracle", task, dialogues)
    for d in dialogues:
        if d.id not in ids:
            continue
        if task == "sextuple":
            write_candidates(folder, d.id, d, preds[d.id])
        else:
            write_chain_predictions(folder, d.id, preds[d.id])


@pytest.mark.parametrize("task, stray", [("sextuple", "output_chat_999.json"), ("emotion", "output_emotions_999.json")])
def test_scored_over_the_ground_truth(capsys, tmp_path, task, stray):
    """One of the 8 sample dialogues predicted, plus a file of a dialogue that is not there: the score is over the 8
    (7 failed, counted 0, exit 3) and the stray file is named on stderr, before the score."""
    _oracle_folder(task, tmp_path, [1])
    (tmp_path / stray).write_text("[]", encoding="utf-8")
    assert main(["score", task, "--pred", str(tmp_path), "--judge", "none", "--engine", "local"]) == 3
    got = capsys.readouterr()
    assert f"pair with no chosen dialogue and were not scored: {stray}" in got.err
    assert "7 of 8 samples failed" in got.err
    out = run_json(capsys, "score", task, "--pred", str(tmp_path), "--judge", "none", "--engine", "local", "--json",
                   "--allow-failures")
    assert out["dialogues"] == 8 and out["score"] == pytest.approx(1 / 8) and out["unpaired_files"] == [stray]
    assert sorted(f["dialogue"] for f in out["failures"]) == list(range(2, 9))
    assert {f["reason"] for f in out["failures"]} == {"missing prediction"}


@pytest.mark.parametrize("task, stray", [("sextuple", "output_chat_999.json"), ("emotion", "output_emotions_999.json")])
def test_nothing_pairs_is_a_usage_error(capsys, tmp_path, task, stray):
    (tmp_path / stray).write_text("[]", encoding="utf-8")
    out = tmp_path / "out"
    assert main(["score", task, "--pred", str(tmp_path), "--judge", "none", "--out", str(out)]) == 2
    assert "no prediction file" in capsys.readouterr().err and not out.exists()  # nothing written
