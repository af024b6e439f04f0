"""Every case of the bad-input corpus (tests/badinput/<task>/<case>/, see corpus.py) through the command line, in
process: a damaged input is refused with ONE line naming the file, the record and the field, exit status 2, and
nothing written (not beside the input, not in the current folder, not in the cache, not the --out folder); input a
user rightly expects to work (a UTF-8 BOM, CRLF line endings) is read exactly as the clean base is. Where a task's
documented rule is to score the rest (a narrative run whose ground truth holds an unreadable story: that story fails,
exit 3, as `score narrative` counts it), the case says so and checks that the damage is named."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus import Case, cases, fill, lay_out, snapshot  # noqa: E402

from emocaustics.cli import main  # noqa: E402

TASKS = ("aer", "ecpe", "narrative", "human", "emocaustics")
MAX_LINE = 1500  # an error line never echoes a huge record back


def _run(case: Case, work: Path, tmp: Path, monkeypatch, capsys) -> tuple[int, str, str]:
    cwd = tmp / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    monkeypatch.setenv("EMOCAUSTICS_CACHE", str(tmp / "cache"))
    for key, value in case.env.items():
        monkeypatch.setenv(key, value.replace("{work}", str(work)))
    capsys.readouterr()
    rc = main(fill(case.argv, work))
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


VOLATILE = ("seconds", "timings", "wall_s")  # keys ending so: timings differ between two runs of anything


def _normalised(text: str, work: Path) -> str:
    text = text.replace(str(work), "{work}")
    try:
        doc = json.loads(text)
    except ValueError:
        return text

    def drop(x: Any) -> Any:
        if isinstance(x, dict):
            return {k: drop(v) for k, v in x.items() if not k.endswith(VOLATILE)}
        return [drop(v) for v in x] if isinstance(x, list) else x

    return json.dumps(drop(doc), sort_keys=True, ensure_ascii=False)


@pytest.mark.parametrize("case", cases(), ids=lambda c: c.id)
def test_bad_input_case(case: Case, tmp_path: Path, monkeypatch, capsys) -> None:
    work = lay_out(case, case.task, tmp_path / "work")
    before = snapshot(work)
    rc, out, err = _run(case, work, tmp_path, monkeypatch, capsys)
    assert "Traceback" not in err, err[-3000:]
    status = case.expect["status"]
    assert rc == status, f"{case.id} ({case.why}): exit {rc}, expected {status}\nstderr: {err[-2000:]}"
    if status == 2:
        lines = [line for line in err.splitlines() if line.strip()]
        assert len(lines) == 1, f"{case.id}: expected one error line, got {len(lines)}:\n{err[:3000]}"
        line = lines[0]
        assert line.startswith("emocaustics: error: "), line
        assert len(line) <= MAX_LINE, f"{case.id}: error line of {len(line)} characters: {line[:300]}..."
        for name in case.expect.get("names", []):
            assert name.replace("{work}", str(work)) in line, f"{case.id}: {name!r} not in: {line}"
        assert snapshot(work) == before, f"{case.id}: files written or changed beside the input"
        assert not (work / "out").exists(), f"{case.id}: the --out folder was created"
        assert not any((tmp_path / "cwd").iterdir()), f"{case.id}: files written in the current folder"
        # the cache holds nothing but what it derives from the (good) ground truth: the EmoCaustics pairing check
        # and its loader's index of the data folder (tasks/longdialogue/data/loadcache.py)
        cache = tmp_path / "cache"
        written = [p for p in cache.rglob("*")
                   if p.is_file() and p.relative_to(cache).parts[0] not in ("pairing", "dataset-index")]
        assert not written, f"{case.id}: cache written: {written}"
        return
    if case.expect.get("same_as_base"):
        base = lay_out(None, case.task, tmp_path / "base")
        base_case = Case(case.task, "_base", case.folder, "", case.argv, case.expect)
        base_tmp = tmp_path / "base-run"
        base_tmp.mkdir()
        rc_base, out_base, _ = _run(base_case, base, base_tmp, monkeypatch, capsys)
        assert rc_base == rc
        assert _normalised(out, work) == _normalised(out_base, base), f"{case.id}: read differently from the base"
    for text in case.expect.get("stdout", []):
        assert text in out, f"{case.id}: {text!r} not in stdout: {out[-2000:]}"
    for text in case.expect.get("stderr", []):  # a warning naming the file, the record and the field
        assert text.replace("{work}", str(work)) in err, f"{case.id}: {text!r} not in stderr: {err[-2000:]}"
    for rel, texts in case.expect.get("files", {}).items():  # what a finished run wrote about the damage
        written = (work / rel).read_text(encoding="utf-8")
        for text in texts:
            assert text in written, f"{case.id}: {text!r} not in {rel}: {written[:2000]}"


@pytest.mark.parametrize("task", TASKS)
def test_every_task_has_a_corpus_of_at_least_15_cases(task: str) -> None:
    found = cases(task)
    assert len(found) >= 15, f"{task}: {len(found)} bad-input cases"
    assert all(c.expect["status"] in (0, 2, 3) for c in found)
    assert os.path.isdir(Path(__file__).parent / task / "_base")
