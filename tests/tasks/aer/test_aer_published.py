"""The published SemEval-2026 Task 12 data (EMOCAUSTICS_AER_DATA, else ../shared/datasets/aer beside the checkout;
skipped, saying so, when neither is there): the calibration rows and the defects we found in it."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from emocaustics.core.errors import DataError
from emocaustics.core.task import ScoreContext, get_task, parse_options
from emocaustics.tasks.aer.scoring import write_submission
from tasks.aer.aer_fixtures import published_root as _root

TASK = get_task("aer")


def _load(split: str, method: str = "oracle", **opts):
    options = parse_options(TASK, {"method": method, **opts})
    return TASK.load(TASK.Dataset(split=split, data=str(_root())), options), options


@pytest.mark.parametrize("split, n", [("sample", 200), ("test", 612), ("dev", 400)])
def test_oracle_scores_one_and_all_options_zero(split: str, n: int) -> None:
    loaded, options = _load(split)
    assert len(loaded.samples) == n and all(s.target for s in loaded.samples)
    oracle = TASK.score(loaded.samples, TASK.predict("oracle", loaded.samples, options), options, ScoreContext())
    assert oracle.summary["score"] == 1.0 and oracle.summary["exact_match"] == n
    # no question has all four options as gold, so A-D is a superset everywhere
    every = TASK.score(loaded.samples, TASK.predict("all-options", loaded.samples, options), options, ScoreContext())
    assert every.summary["score"] == 0.0 and every.summary["wrong"] == n


def test_gold_sizes_as_published() -> None:
    sizes = {split: Counter(len(s.target) for s in _load(split)[0].samples) for split in ("sample", "test", "dev")}
    assert sizes == {"sample": {1: 117, 2: 55, 3: 28}, "test": {1: 500, 2: 82, 3: 30}, "dev": {1: 210, 2: 140, 3: 50}}


def test_defects_found_in_the_published_data() -> None:
    kinds = {split: Counter(d.kind for d in _load(split)[0].defects) for split in ("sample", "test", "dev")}
    assert kinds["sample"] == {"repeated-option": 40, "repeated-question": 7}
    assert kinds["test"] == {"repeated-option": 61, "repeated-question": 39}
    assert kinds["dev"] == {"repeated-option": 93, "repeated-question": 14, "topic-without-documents": 36}


def test_dev_with_context_is_an_error_naming_split_and_topics() -> None:
    with pytest.raises(DataError) as err:
        _load("dev", "llm", context="full")
    assert "split dev: 36 topic(s) with 400 question(s) have no documents" in str(err.value)


def test_full_context_never_carries_image_data(tmp_path: Path) -> None:
    loaded, options = _load("test", "llm", context="full", max_context_tokens=32768)
    samples = TASK.prepare(loaded.samples, options, ScoreContext())
    assert all("data:image" not in s.meta["context"] and "base64" not in s.meta["context"] for s in samples)
    trims = [s.meta["trim"] for s in samples]
    assert all(t["tokens_kept"] <= t["budget"] and t["docs_total"] >= 8 for t in trims)
    assert len({s.input["topic_id"] for s in samples}) == 24


def test_oracle_submission_round_trip(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import argparse

    from emocaustics.tasks.aer.cli import register_score

    loaded, options = _load("test")
    path, _ = write_submission(tmp_path / "submission.jsonl", {s.id: s.target for s in loaded.samples})
    parser = argparse.ArgumentParser()
    register_score(parser.add_subparsers())
    args = parser.parse_args(["aer", "--pred", str(path), "--split", "test", "--data", str(_root()), "--json"])
    assert args.func(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["score"] == 1.0 and out["total"] == 612 and out["missing"] == []
