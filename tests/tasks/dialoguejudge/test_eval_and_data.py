"""`emocaustics eval dialogue-judge` end to end into summary.csv and the report, and the data's named errors."""

from __future__ import annotations

import json

import polars as pl
import pytest

from emocaustics.cli import main
from emocaustics.core.errors import DataError, UsageError
from emocaustics.core.task import get_task

ROUND = "FreeTopicRound1"

TASK = get_task("dialogue-judge")


def test_eval_oracle_into_summary_and_report(small_round, tmp_path):
    run = tmp_path / "run"
    assert main(["eval", "dialogue-judge", "--method", "oracle", "--split", ROUND, "-T", "resamples=50",
                 "-D", f"data={small_round}", "--out", str(run)]) == 0
    summary = pl.read_csv(run / "summary.csv").row(0, named=True)
    assert summary["score"] == pytest.approx(1.0, abs=1e-9)  # the system-level Pearson r
    assert summary["qc_pass"] is True and summary["qc_p"] < 0.05 and summary["item_alpha"] == 1.0
    assert summary["failures"] == 0
    # the interval is the bootstrap of r itself (configs.json's, the one place), not of the per-sample shares:
    # an exact judge is exact in every resample
    figures = json.loads((run / "configs.json").read_text())
    figures = (figures[0] if isinstance(figures, list) else next(iter(figures.values())))["summary"]
    assert (summary["ci_low"], summary["ci_high"]) == (figures["pearson_low"], figures["pearson_high"])
    assert summary["ci_low"] == pytest.approx(1.0, abs=1e-9) and summary["ci_high"] == pytest.approx(1.0, abs=1e-9)
    assert "qc_pass" in (run / "report.html").read_text()
    assert pl.read_parquet(run / "tables" / "judge_agreement.parquet").height == 8  # overall + seven criteria


def test_eval_constant_fails_qc_and_has_no_score(small_round, tmp_path):
    run = tmp_path / "run"
    assert main(["eval", "dialogue-judge", "--method", "constant", "-T", "resamples=0",
                 "-D", f"data={small_round}", "--out", str(run)]) == 0
    summary = pl.read_csv(run / "summary.csv").row(0, named=True)
    assert summary["qc_pass"] is False and summary["qc_p"] == 1.0 and summary["score"] is None


@pytest.mark.parametrize("edit, field", [
    (lambda o: o.pop("worker"), "worker"),
    (lambda o: o["scores"].update(fun=140), "scores.fun"),
    (lambda o: o["scores"].update(topic="high"), "scores.topic"),
    (lambda o: o.update(model="gpt"), "model"),
])
def test_a_bad_line_is_named_by_file_line_and_field(small_round, tmp_path, edit, field):
    lines = (small_round / f"dialogues_{ROUND}.jsonl").read_text().splitlines()
    obj = json.loads(lines[2])
    edit(obj)
    lines[2] = json.dumps(obj)
    (tmp_path / f"dialogues_{ROUND}.jsonl").write_text("\n".join(lines))
    (tmp_path / f"hits_data_{ROUND}.json").write_text((small_round / f"hits_data_{ROUND}.json").read_text())
    with pytest.raises(DataError) as err:
        TASK.load(TASK.Dataset(data=str(tmp_path)), TASK.Options(method="oracle"))
    assert err.value.record == "line 3" and err.value.field == field and f"dialogues_{ROUND}.jsonl" in str(err.value)


def test_a_missing_round_names_the_file(tmp_path):
    with pytest.raises(UsageError, match=f"dialogues_FreeTopicRound2.jsonl: no such file"):
        TASK.load(TASK.Dataset(data=str(tmp_path), split="FreeTopicRound2"), TASK.Options(method="oracle"))


def test_eval_a_model_through_an_openai_compatible_endpoint(tiny_round, tmp_path, monkeypatch):
    """One schema-constrained call per conversation and epoch, the criteria in the shared system prefix; the
    stand-in answers each conversation's worker ratings plus fresh noise on every call, and a tenth of its answers
    are invalid JSON, re-asked. `--epochs 2` gives the judge's self-replication (`self_r`) in summary.csv, the one
    configs.json holds beside the humans' 0.969."""
    from fakes.noisy_judge import NoisyJudge
    from fakes.openai_chat import Faults

    from emocaustics.tasks.human.cli import PAPER_R

    data, run = tiny_round, tmp_path / "run"
    samples = TASK.load(TASK.Dataset(data=str(data)), TASK.Options(method="llm")).samples
    with NoisyJudge(samples, Faults(rate_invalid=0.1, seed=2), seed=1) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        assert main(["eval", "dialogue-judge", "--model", "openai:noisy-judge", "--epochs", "2", "-T", "resamples=0",
                     "-D", f"data={data}", "--out", str(run)]) == 0
        bodies = list(server.bodies)
    assert len(bodies) >= 2 * len(samples) and bodies[0]["messages"][0]["role"] == "system"  # each epoch asked anew
    assert "The chatbot stayed on topic." in bodies[0]["messages"][0]["content"]
    assert {b["messages"][0]["content"] for b in bodies} == {bodies[0]["messages"][0]["content"]}  # one prefix
    schema = bodies[0]["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["fun"]["maximum"] == 100 and "reason" in schema["properties"]
    summary = pl.read_csv(run / "summary.csv").row(0, named=True)
    figures = json.loads((run / "configs.json").read_text())[0]["summary"]
    assert summary["samples"] == len(samples) and summary["failures"] == 0 and summary["score"] > 0.5
    assert summary["self_r"] == pytest.approx(figures["self_r"]) and figures["human_self_r"] == PAPER_R
    assert 0.5 < summary["self_r"] < 1 and len(figures["per_epoch"]) == 2


def test_a_grid_of_judges_reports_scatter_qc_criteria_and_pairs(small_round, tmp_path):
    """Two judges in one job: report.html shows each judge's system z against the workers' (every point the
    tables' value, the identity line, r), the QC table (the random judge unreliable), the per-criterion table, and
    the judges' paired test with alpha across them."""
    import re

    job = tmp_path / "job.yaml"
    job.write_text(f"name: judges\ndataset: {{data: {small_round}, split: {ROUND}}}\noutput: {tmp_path / 'runs'}\n"
                   "runs:\n  - {task: dialogue-judge, options: {method: oracle, resamples: 20}}\n"
                   "  - {task: dialogue-judge, options: {method: random, resamples: 20, seed: 2}}\n")
    assert main(["run", str(job)]) == 0
    (run,) = (tmp_path / "runs" / "judges").iterdir()
    page = (run / "report.html").read_text()
    section = page[page.index("<h2>Dialogue judge"):]
    systems = pl.read_parquet(run / "tables" / "judge_system_z.parquet")
    summary = pl.read_csv(run / "summary.csv")
    for label, svg in zip(summary["run"], section.split("<svg")[1:3]):
        r = summary.filter(pl.col("run") == label)["score"][0]
        assert f"{label}: r = {r:.3f}" in svg and "<line" in svg  # the identity line
        found = re.findall(r"<title>([^:<]+): workers ([^,<]+), judge ([^<]+)</title>", svg)
        points = {m: (float(h), float(j)) for m, h, j in found}
        want = systems.filter(pl.col("run") == label)
        assert points == {m: pytest.approx((h, j), abs=5e-4) for m, h, j in want.select("model", "human_z",
                                                                                           "judge_z").iter_rows()}
    assert "unreliable (failed QC)" in section and "System-level Pearson r per criterion" in section
    assert "overall (z)" in section and "Judges compared" in section and "Krippendorff" in section
