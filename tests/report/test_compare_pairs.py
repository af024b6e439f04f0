"""Issue 41 point 9: cross-run `compare` tests like-for-like configs, not every config of one run against every config
of the other. Two hand-written run folders (the runner's tables from hand-made per-sample scores: no engine, no Ray),
each with configs `base`, `close`, `far` scored on the same 30 samples; the second run also has `solo`."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from emocaustics.cli import main
from emocaustics.core.errors import UsageError
from emocaustics.report.compare import compare_runs, describe
from emocaustics.report.tables import SCORE_COLUMNS, write_tables

N = 30


def _rows(label: str, scores: np.ndarray) -> list[dict]:
    return [{"run": label, "task": "sextuple", "method": "window", "model": "m", "kind": "model",
             "sample_id": f"s{i:02d}", "weight": 1.0, "score": float(s), "failed": False, "status": "ok",
             "reason": None, "llm_calls": 0, "cache_hits": 0, "prompt_tokens": 0, "generated_tokens": 0,
             "seconds": 0.0} for i, s in enumerate(scores)]


def _run(root: Path, name: str, seed: int, extra: bool = False) -> Path:
    rng = np.random.default_rng(seed)
    base = rng.uniform(0.3, 0.7, N)
    configs = {"base": base, "close": np.clip(base + rng.normal(0.01, 0.05, N), 0, 1),
               "far": np.clip(base + 0.2 + rng.normal(0, 0.02, N), 0, 1)}
    if extra:
        configs["solo"] = rng.uniform(0, 1, N)
    rows = [r for label, scores in configs.items() for r in _rows(label, scores)]
    out = root / "job" / name
    out.mkdir(parents=True)
    write_tables(out, pl.DataFrame(rows, schema_overrides=SCORE_COLUMNS))
    return out


@pytest.fixture
def runs(tmp_path) -> tuple[Path, Path]:
    return _run(tmp_path, "20260101-000000", 11), _run(tmp_path, "20260102-000000", 12, extra=True)


def _holm(p: list[float]) -> list[float]:
    """Holm's step-down adjustment, written out: the k-th smallest p times (m - k), running maximum, at most 1."""
    order = sorted(range(len(p)), key=lambda i: p[i])
    out, running = [0.0] * len(p), 0.0
    for k, i in enumerate(order):
        running = max(running, min(1.0, p[i] * (len(p) - k)))
        out[i] = running
    return out


def test_configs_pair_by_label_one_holm_family_over_those_pairs(runs):
    result = compare_runs(list(runs))
    pairs = result.pairs
    # 3 like-for-like pairs, not 3 x 4 = 12: each config against its namesake, none mirrored, none twice
    assert pairs.height == 3
    assert pairs["config_a"].to_list() == pairs["config_b"].to_list() == ["base", "close", "far"]
    assert (pairs["run_a"] == "job/20260101-000000").all() and (pairs["run_b"] == "job/20260102-000000").all()
    # Holm over exactly these 3 pairs
    assert pairs["p_holm"].to_list() == pytest.approx(_holm(pairs["p_randomisation"].to_list()))
    assert result.unmatched == ("job/20260102-000000: solo",)  # listed, not tested
    text = describe(result)
    assert "Holm over the 3 pairs" in text and "job/20260102-000000: solo" in text


def test_an_explicit_mapping_tests_only_the_pairs_named(runs):
    result = compare_runs(list(runs), {"base": "far", "close": "solo"})
    got = [(r["config_a"], r["config_b"]) for r in result.pairs.iter_rows(named=True)]
    assert got == [("base", "far"), ("close", "solo")]  # the namesakes are not tested
    assert result.pairs["p_holm"].to_list() == pytest.approx(_holm(result.pairs["p_randomisation"].to_list()))
    assert set(result.unmatched) == {"job/20260101-000000: far", "job/20260102-000000: base",
                                     "job/20260102-000000: close"}
    far = result.pairs.row(0, named=True)
    assert far["significant"] and far["diff"] < -0.1  # base of run 1 is well below far of run 2
    # tuples name the same pairs; a label no run has is one line naming it
    assert compare_runs(list(runs), [("base", "far"), ("close", "solo")]).pairs.equals(result.pairs)
    with pytest.raises(UsageError, match="no run has a config labelled nope"):
        compare_runs(list(runs), {"base": "nope"})
    with pytest.raises(UsageError, match="no pair named holds a config of an earlier run"):
        compare_runs(list(runs), {"solo": "base"})  # solo is only in the later run


def test_the_cli_pairs_by_label_or_by_pair(runs, tmp_path, capsys):
    a, b = map(str, runs)
    assert main(["compare", a, b, "--out", str(tmp_path / "by-label.csv")]) == 0
    assert "solo" in capsys.readouterr().out
    assert pl.read_csv(tmp_path / "by-label.csv").height == 3
    assert main(["compare", a, b, "--pair", "far", "base", "--out", str(tmp_path / "named.csv")]) == 0
    named = pl.read_csv(tmp_path / "named.csv")
    assert named.select("config_a", "config_b").rows() == [("far", "base")]
    assert main(["compare", a, "--pair", "far", "base"]) == 2  # --pair is between runs
    assert "give two run folders" in capsys.readouterr().err
