"""Each task's own sample page in `emocaustics view` (core.sampleview.SampleView), in a real headless Chromium over
the static export of one small calibration run (no model: ecpe, sextuple, emotion and narrative oracles and baselines,
human's QC process): open the run from report.html's link, open a sample of each task, and read gold, prediction and
the scorer's decisions from the page. Screenshots go to runs/test-artifacts/view-<task>-sample.png."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import polars as pl
import pytest

from emocaustics.evallog.read import RunLog
from emocaustics.view.data import ViewData
from emocaustics.view.server import export
from fakes.browser import REPO, Browser, chromium_or_skip
from view.test_view_browser import ARTIFACTS, _goto, _ready, _text

pytestmark = pytest.mark.slow
SHARED = REPO.parent / "shared" / "datasets"
JOB = """name: viewtasks
dataset:
  subset: sample
  ecpe: {ids: [1401]}
  human: {file: hits_data_FreeTopicRound1.json}
runs:
  - {task: ecpe, options: {method: oracle}}
  - {task: ecpe, options: {method: baseline}}
  - {task: sextuple, method: oracle}
  - {task: sextuple, method: baseline}
  - {task: emotion, method: baseline}
  - {task: narrative, options: {method: files}}
  - {task: human, options: {method: process}}
scoring: {judge: none}
"""


def _data(env: str, name: str, probe: str) -> str:
    for cand in filter(None, [os.environ.get(env), str(SHARED / name)]):
        if (Path(cand) / probe).is_file():
            return cand
    pytest.skip(f"{env} data not here")


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from emocaustics.jobs.runner import run_job
    from emocaustics.jobs.spec import load_job

    tmp = tmp_path_factory.mktemp("viewtasks")
    mp = pytest.MonkeyPatch()
    mp.setenv("EMOCAUSTICS_CACHE", str(tmp / "cache"))
    mp.setenv("EMOCAUSTICS_ECAC_DATA", _data("EMOCAUSTICS_ECAC_DATA", "ecac", "Subtask_1_test.json"))
    mp.setenv("EMOCAUSTICS_HUMANEVAL_DATA", _data("EMOCAUSTICS_HUMANEVAL_DATA", "humaneval",
                                                  "hits_data_FreeTopicRound1.json"))
    try:
        (tmp / "job.yaml").write_text(JOB, encoding="utf-8")
        return run_job(load_job(tmp / "job.yaml", overrides={"output": str(tmp / "runs")}), out=str(tmp / "run"))
    finally:
        mp.undo()


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory):
    b = Browser(chromium_or_skip(), tmp_path_factory.mktemp("profile") / "p")
    try:
        yield b
    finally:
        b.close()


def _rows(b: Browser, title: str) -> list[dict]:
    """The task table under the section whose heading starts with `title`: cells and the decision's mark."""
    return b.eval(f"""(() => {{
      const sec = Array.from(document.querySelectorAll('section')).find(
        s => (s.querySelector('h3') || {{}}).innerText?.startsWith({title!r}));
      return sec ? Array.from(sec.querySelectorAll('table.task-table tr')).filter(r => r.cells[0].tagName === 'TD').map(
        r => ({{cells: Array.from(r.cells).map(c => c.innerText), mark: r.className}})) : null; }})()""")


def _open(b: Browser, view: ViewData, label: str, sample_id: str) -> None:
    i = view.labels.index(label)
    j = [str(r["sample_id"]) for r in view.table(i)["rows"]].index(sample_id)
    _goto(b, f"#/s/{i}/{j}")
    assert _text(b, "#sample-id") == sample_id


def test_each_task_sample_page(run_dir: Path, browser: Browser, tmp_path: Path) -> None:
    view = ViewData(RunLog(run_dir))
    export(view, run_dir / "view")  # where report.html's links point
    errors = browser.load((run_dir / "report.html").as_uri())
    assert errors == []
    assert "emocaustics view" in _text(browser, "#viewer-note")
    browser.eval("Array.from(document.querySelectorAll('#viewer-configs a')).find("
                 "a => a.innerText === 'ecpe_baseline').click()")
    _ready(browser, f"#/c/{view.labels.index('ecpe_baseline')}")
    assert browser.eval("location.pathname").endswith("/view/index.html")
    shots: list[str] = []

    # ECPE: gold cause spans marked in the conversation; every pair with its outcome marked
    _open(browser, view, "ecpe_baseline", "1401")
    conv = _rows(browser, "Conversation 1401")
    first = conv[0]["cells"]
    assert "«" in first[2] and first[3] == "surprise" and first[5] == "joy"  # gold vs predicted emotion
    pairs = _rows(browser, "Pairs")
    items = view.sample(view.labels.index("ecpe_baseline"), 0)["items"]
    assert [p["cells"][-1] for p in pairs] == [it["outcome"] for it in items]
    assert {p["mark"] for p in pairs if p["cells"][-1] == "missed"} == {"miss"}
    assert {p["mark"] for p in pairs if p["cells"][-1] == "wrong"} == {"bad"}
    assert "1_surprise" in _text(browser, "pre.gold") and "1_joy" in _text(browser, "pre.prediction")
    shots.append("ecpe")
    browser.screenshot(tmp_path / "view-ecpe-sample.png")

    # sextuple: per-utterance gold and predicted sextuples, oracle all matched, baseline not
    for label, mark in (("sextuple_oracle", "ok"), ("sextuple_baseline", "bad")):
        _open(browser, view, label, "1")
        rows = _rows(browser, "Dialogue 1")
        gold = view.sample(view.labels.index(label), 0)["input"]["utterances"][0]["gt"]
        assert f"target: {gold['target']}" in rows[0]["cells"][3] and rows[0]["mark"] == mark
    browser.screenshot(tmp_path / "view-sextuple-sample.png")
    shots.append("sextuple")

    # emotion: gold and predicted chains, each gold event with its match decision
    _open(browser, view, "emotion_baseline", "1")
    matches = _rows(browser, "Event and chain matches")
    chains = view.sample(view.labels.index("emotion_baseline"), 0)["input"]["chains"]
    assert {m["cells"][2] for m in matches} <= {ev["event"] for evs in chains.values() for ev in evs}
    assert all(m["mark"] == ("ok" if m["cells"][5] == "true" else "bad") for m in matches)
    browser.screenshot(tmp_path / "view-emotion-sample.png")
    shots.append("emotion")

    # narrative: the story with its gold spans, events compared, component matches with the scorer's reasons
    _open(browser, view, "narrative_files", "clockmaker_en")
    assert "«e1: " in _text(browser, "section")
    comps = _rows(browser, "Component matches")
    assert "characters" in [c["cells"][0] for c in comps]
    assert any(e["mark"] == "bad" for e in _rows(browser, "Events"))  # the prediction's deliberate errors
    browser.screenshot(tmp_path / "view-narrative-sample.png")
    shots.append("narrative")

    # human: the HIT's ratings (the qc system marked) and the QC outcome the scorer decided
    label = "human_process"
    sid = str(view.table(view.labels.index(label))["rows"][0]["sample_id"])
    _open(browser, view, label, sid)
    scores = pl.read_parquet(run_dir / "scores.parquet").filter((pl.col("run") == label)
                                                                 & (pl.col("sample_id") == sid))
    passed = scores["score"].item() == 1.0  # qc_passed, the primary metric
    assert _text(browser, "section h3").count(f"Quality control: {'passed' if passed else 'failed'}") == 1
    assert any(r["mark"] == "miss" and r["cells"][0] == "qc" for r in _rows(browser, "HIT "))
    browser.screenshot(tmp_path / "view-human-sample.png")
    shots.append("human")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    for name in shots:
        shutil.copyfile(tmp_path / f"view-{name}-sample.png", ARTIFACTS / f"view-{name}-sample.png")
