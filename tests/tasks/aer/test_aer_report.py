"""AER's score by topic in the run report (and after `emocaustics report`), rebuilt from scores.parquet: a
calibration-only job (no model) on our own small dataset."""

from __future__ import annotations

import json
import re
from pathlib import Path

import polars as pl
import yaml

from emocaustics.jobs.runner import rebuild_report, run_job
from emocaustics.jobs.spec import load_job
from tasks.aer.aer_fixtures import question, standard_dataset, topic, write_dataset


def _topic_rows(html: str) -> dict[str, list[str]]:
    """The at-a-glance table of the 'AER by topic' section: topic -> its cells."""
    section = html.split("<h2>AER by topic</h2>", 1)[1].split("<details>", 1)[0]
    rows = {}
    for row in re.findall(r"<tr>(.*?)</tr>", section.split("<tbody>", 1)[1]):
        cells = [re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row)]
        rows[cells[0]] = cells[1:]
    return rows


def test_report_shows_each_configs_score_by_topic(tmp_path: Path) -> None:
    # topic 1: q-1 A, q-2 A,B; topic 2: q-3 C, q-4 B,C,D; topic 3: q-5 D, q-6 A,C (standard_dataset), plus topic 7
    # whose single question has gold "A,B,C,D": all-options scores 1 there and 0 elsewhere
    root = standard_dataset(tmp_path / "data")
    records = [json.loads(line) for line in (root / "sample_data" / "questions.jsonl").read_text().splitlines()]
    records.append(question(7, 7, "A,B,C,D"))
    write_dataset(root, {"sample": (records, [topic(1), topic(2), topic(3), topic(7)])})
    spec = {"name": "aer-by-topic", "dataset": {"aer": {"data": str(root), "split": "sample"}},
            "runs": [{"task": "aer", "options": {"method": "oracle"}},
                     {"task": "aer", "options": {"method": "all-options"}}],
            "scoring": {"judge": "none"}}
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(spec), encoding="utf-8")
    run_dir = run_job(load_job(path), out=str(tmp_path / "run"))
    scores = pl.read_parquet(run_dir / "scores.parquet")
    assert scores.filter(pl.col("sample_id") == "q-7")["aer_topic"].to_list() == [7, 7]
    labels = scores["run"].unique(maintain_order=True).to_list()  # oracle's config, then all-options'
    assert [scores.filter(pl.col("run") == label)["method"][0] for label in labels] == ["oracle", "all-options"]
    for html in ((run_dir / "report.html").read_text(), rebuild_report(run_dir).read_text()):
        assert "<h2>AER by topic</h2>" in html
        rows = _topic_rows(html)
        head = html.split("<h2>AER by topic</h2>", 1)[1].split("</thead>", 1)[0]
        assert [re.sub(r"<[^>]+>", "", h) for h in re.findall(r"<th>(.*?)</th>", head)] == [
            "topic", "questions", *labels]  # configs in the job's order
        # topic, questions, oracle, all-options
        assert rows == {"1": ["2", "1.0000", "0.0000"], "2": ["2", "1.0000", "0.0000"],
                        "3": ["2", "1.0000", "0.0000"], "7": ["1", "1.0000", "1.0000"]}
