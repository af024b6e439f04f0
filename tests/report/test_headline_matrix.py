"""One headline per config (issue 53): the console's score line, `headline`, summary.csv, summary.md and the report's
table give the same score, sample count and failure count, for one epoch and for epochs with every reducer (the
per-sample reducers and a task's vote over the predictions), with failed and unscored samples. The frames are built
by the runner's own functions (`score_table`, `score_epochs`, `write_tables`, `score_line`) from a toy task whose
scorer's corpus summary is the per-epoch mean (what the console used to print). No engine, no Ray."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from types import SimpleNamespace

import polars as pl
import pytest

from emocaustics.core.predictions import pair
from emocaustics.core.records import Failure, Sample, Scored, rows_frame
from emocaustics.jobs.epochs import score_epochs, score_line, score_table
from emocaustics.report.tables import write_tables
from emocaustics.scoring.headline import headline

IDS = [f"s{i}" for i in range(6)]
# each epoch's answers: a number is the sample's score, "x" a failure, "?" unscored (scored, no value applies)
EPOCHS = [["1", "0", "x", "0", "?", "1"],
          ["0", "1", "x", "0", "?", "x"],
          ["0", "0", "1", "0", "?", "0"],
          ["0", "0", "x", "1", "?", "0"]]


class Toy:
    """A task whose primary metric `acc` is per sample and whose corpus summary is the mean of the epoch's values."""

    name = "toy"

    class Options:
        reducers: dict = {}

    class report:  # noqa: N801  (the task's report part, as `cfg.task.report`)
        primary_metric = "acc"

        @staticmethod
        def summary_columns(options):
            return {}

    class scorer:  # noqa: N801
        @staticmethod
        def score(samples, predictions, options, ctx):
            rows = []
            for s in samples:
                p = predictions[s.id]
                if isinstance(p, Failure):
                    rows.append({"sample_id": s.id, "metric": "acc", "value": None, "status": "failed",
                                 "reason": str(p)})
                else:
                    rows.append({"sample_id": s.id, "metric": "acc", "value": None if p == "?" else float(p),
                                 "status": "unscored" if p == "?" else "ok"})
                rows.append({"sample_id": s.id, "metric": "extra", "value": 0.5})
            values = [r["value"] or 0.0 for r in rows if r["metric"] == "acc"]
            return Scored(rows_frame(rows), {"acc": sum(values) / len(values)})

        @staticmethod
        def finalize(folder, samples, predictions, options):
            pass


class Voting(Toy):
    """Reduces its epochs' predictions by a vote (as AER's `mode`), then scores the voted one."""

    class Options:
        reducers = {"mode": lambda got: max((g for g in got if isinstance(g, str)), default=None,
                                                      key=lambda g: sum(1 for h in got if h == g))}


def _answers(epoch: int) -> dict:
    return {sid: Failure("solve", "broken JSON") if a == "x" else a for sid, a in zip(IDS, EPOCHS[epoch - 1])}


def _config(tmp: Path, label: str, epochs: int, reducer: str, task=Toy) -> SimpleNamespace:
    return SimpleNamespace(label=label, task=task, epochs=epochs, reducer=reducer, pred_dir=tmp / label, model="m",
                           options=SimpleNamespace(method="llm"), kind="model", price=None)


CONFIGS = {"one": (1, "mean", Toy), "mean": (4, "mean", Toy), "mode": (4, "mode", Toy), "max": (4, "max", Toy),
           "pass2": (4, "pass@2", Toy), "vote": (4, "mode", Voting)}
LOG = SimpleNamespace(config=lambda label: SimpleNamespace(finish=lambda samples, predictions: None))


def _as_the_runner_does(tmp: Path) -> tuple[pl.DataFrame, dict[str, str]]:
    """Every config scored as `jobs.runner.run_job` scores it: its frames (the reduced table, and for epochs the
    per-epoch one) and its console line (`score_line`)."""
    samples = [Sample(sid, {"q": sid}, "gold") for sid in IDS]
    frames, lines = [], {}
    for label, (epochs, reducer, task) in CONFIGS.items():
        cfg = _config(tmp, label, epochs, reducer, task)
        if epochs > 1:
            solved = SimpleNamespace(samples=samples, epoch=lambda e: (_answers(e), {}))
            scored, frame, epoch_frame = score_epochs(cfg, solved, None, LOG)
            frames += [frame, epoch_frame]
        else:
            scored = task.scorer.score(samples, pair(samples, _answers(1)).predictions, cfg.options, None)
            frame = score_table(cfg, scored, {})
            frames.append(frame)
        lines[label] = score_line(cfg, scored, frame, 1.5)
    return pl.concat(frames, how="diagonal_relaxed"), lines


def _markdown_rows(text: str) -> dict[str, dict[str, str]]:
    """summary.md's main table by run: column -> cell."""
    table = text.split("\n\n")[1].splitlines()
    head = [c.strip() for c in table[0].strip("|").split("|")]
    return {cells[0]: dict(zip(head, cells)) for line in table[2:]
            if (cells := [c.strip() for c in line.strip("|").split("|")])}


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("matrix") / "run"
    run_dir.mkdir()
    (run_dir / "run.json").write_text(json.dumps({"job": "headline-job"}))
    scores, lines = _as_the_runner_does(run_dir)
    summary = write_tables(run_dir, scores).summary
    return run_dir, scores, lines, summary


def test_every_output_gives_the_headline_of_the_reduced_rows(written):
    run_dir, scores, lines, summary = written
    heads = {r["run"]: r for r in headline(scores).iter_rows(named=True)}
    csv_rows = {r["run"]: r for r in csv.DictReader((run_dir / "summary.csv").open())}
    md_rows = _markdown_rows((run_dir / "summary.md").read_text())
    from emocaustics.report.html import summary_section  # the report's table, of the summary write_tables returned

    page = "".join(summary_section(summary))
    assert list(heads) == list(CONFIGS)
    for label, head in heads.items():
        got = re.fullmatch(rf"\[score {label}\] (.+) ([0-9.]+|None), (\d+) failures, (\d+) samples, 1.5 s",
                           lines[label])
        assert got, lines[label]
        assert head["samples"] == 6 and int(got.group(4)) == 6, label
        assert int(got.group(3)) == head["failures"] == int(csv_rows[label]["failures"]) \
            == int(md_rows[label]["failures"]), label
        assert float(got.group(2)) == round(head["score"], 4) == round(float(csv_rows[label]["score"]), 4), label
        assert md_rows[label]["score"] == f"{head['score']:.4f}" and f"<td>{head['score']:.4f}</td>" in page, label
        assert int(md_rows[label]["samples"]) == int(csv_rows[label]["samples"]) == head["samples"], label


def test_the_headline_is_the_reducers_figure_not_the_epoch_mean(written):
    _, scores, lines, _ = written
    heads = {r["run"]: r for r in headline(scores).iter_rows(named=True)}
    # s4 unscored in every epoch: counted in samples, out of the mean (5 values); a failed epoch counts 0 (s2 fails
    # in epochs 1, 2 and 4, and s5 in epoch 2): every other sample scores 1 in one epoch of the four
    assert heads["one"]["score"] == pytest.approx(2 / 5) and heads["one"]["failures"] == 1
    assert heads["max"]["score"] == pytest.approx(5 / 5) and heads["max"]["failures"] == 0
    assert heads["mean"]["score"] == pytest.approx(1 / 4)
    assert heads["pass2"]["score"] == pytest.approx(1 / 2)  # 1 - C(3, 2) / C(4, 2)
    assert heads["mode"]["score"] == 0.0
    assert heads["vote"]["score"] == pytest.approx(1 / 5) and heads["vote"]["failures"] == 0  # s2's vote: "1"
    assert lines["max"].startswith("[score max] acc (max over 4 epochs) 1.0, 0 failures, 6 samples")
    assert lines["one"].startswith("[score one] acc 0.4, 1 failures, 6 samples")


def test_the_summary_is_titled_by_the_jobs_name(written):
    run_dir = written[0]
    assert (run_dir / "summary.md").read_text().startswith("# headline-job / run\n")


def test_the_console_names_the_per_sample_metric_its_score_holds(tmp_path):
    """A task whose primary metric is a corpus figure (ECPE's official F1): `score` holds its first per-sample
    metric, and the line says which."""

    class Corpus(Toy):
        class report(Toy.report):  # noqa: N801
            primary_metric = "official_f1"

    samples = [Sample(sid, {"q": sid}, "gold") for sid in IDS]
    cfg = _config(tmp_path, "c", 1, "mean", Corpus)
    scored = Corpus.scorer.score(samples, pair(samples, _answers(3)).predictions, cfg.options, None)
    scored.summary["official_f1"] = 0.123  # the corpus figure: not the summary's score column
    frame = score_table(cfg, scored, {})
    assert score_line(cfg, scored, frame, 0.0) == "[score c] acc 0.2, 0 failures, 6 samples, 0.0 s"
