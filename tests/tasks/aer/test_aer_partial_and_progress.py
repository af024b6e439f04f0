"""Issue 53: a submission written from part of a split says so (finding 12); the documents of `context: retrieve`
are embedded with a progress line (finding 16, issue 55 item 4)."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

from emocaustics.core.task import get_task, parse_options
from tasks.aer.aer_fixtures import standard_dataset

TASK = get_task("aer")


def _finalize(tmp_path: Path, keep: int | None) -> tuple[Path, dict]:
    root = standard_dataset(tmp_path / "data")
    opts = parse_options(TASK, {"method": "llm", "context": "none"})
    samples = TASK.load(TASK.Dataset(split="sample", data=str(root)), opts).samples
    samples = samples if keep is None else samples[:keep]  # the runner's select.limit
    paths = TASK.finalize(tmp_path / f"out{keep}", samples, {s.id: {"answer": ["A"]} for s in samples}, opts)
    return paths[1], json.loads(paths[2].read_text())


def test_a_partial_submission_says_how_much_it_covers(tmp_path, capsys):
    zpath, doc = _finalize(tmp_path, 2)
    said = capsys.readouterr().out
    assert f"{zpath}: a partial submission: it covers 2 of the 6 questions of split sample" in said
    assert doc["config"]["covers"] == {"questions": 2, "of": 6}  # results.json keeps it
    with zipfile.ZipFile(zpath) as zf:  # the zip Codabench takes is unchanged: submission.jsonl alone
        assert zf.namelist() == ["submission.jsonl"]
    _, doc = _finalize(tmp_path, None)
    assert "partial" not in capsys.readouterr().out and doc["config"]["covers"] == {"questions": 6, "of": 6}
