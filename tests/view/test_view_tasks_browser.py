"""Each task's own sample page in `emocaustics view` (Report.view_sample), in a real headless Chromium over
the static export of one small run (every task: ecpe, sextuple, emotion and narrative oracles and baselines, human's QC
process at two thresholds, and the model methods of ecpe, sextuple, emotion and narrative against the OpenAI-compatible
stand-in, which answers one sample of each with invalid JSON so that it fails): open the run from report.html's link,
open a sample of each task and read gold, prediction and the scorer's decisions from the page; then for every task
filter a config to its failures, open the failed sample, read its prompt, answer and error, open a scored sample and
read its decisions, and compare the sample with another config. Screenshots go to runs/test-artifacts/
view-<task>-sample.png, and with EMOCAUSTICS_SCREENSHOTS=DIR also to DIR/<task>-*.png."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import polars as pl
import pytest

from emocaustics.evallog.read import RunLog
from emocaustics.view.data import ViewData
from emocaustics.view.server import export
from fakes.browser import REPO, Browser, chromium_or_skip
from fakes.openai_chat import Faults
from fakes.openai_routed import RoutedFakeServer
from view.test_view_browser import ARTIFACTS, _do, _goto, _ready, _text, shoot

pytestmark = pytest.mark.slow
SHARED = REPO.parent / "shared" / "datasets"
# One sample of each model method is answered with invalid JSON on every request (the stand-in's route): a text that
# is in every prompt about that sample and in no other.
FAILS = {"ecpe": ("1403", "Um , well , Max told me about Minsk"),
         "sextuple": ("2", "今天的辩题是：大学生应不应该在课余时间做兼职"),
         "emotion": ("2", "今天的辩题是：大学生应不应该在课余时间做兼职"),
         "narrative": ("ferry_en", "Tom Hale had kept the ferry")}
JOB = """name: viewtasks
dataset:
  subset: sample
  ecpe: {{ids: [1401, 1403]}}
  human: {{file: hits_data_FreeTopicRound1.json}}
models: {{api: {{spec: "openai:fake-chat@{url}", concurrency: 8}}}}
runs:
  - {{task: ecpe, options: {{method: oracle}}}}
  - {{task: ecpe, options: {{method: baseline}}}}
  - {{task: ecpe, options: {{method: direct}}, model: api}}
  - {{task: sextuple, method: oracle}}
  - {{task: sextuple, method: baseline}}
  - {{task: sextuple, method: direct, model: api, dataset: {{ids: [1, 2]}}}}
  - {{task: emotion, method: baseline}}
  - {{task: emotion, method: direct, model: api, dataset: {{ids: [1, 2]}}}}
  - {{task: narrative, options: {{method: files}}}}
  - {{task: narrative, options: {{method: llm}}, model: api, dataset: {{stories: [clockmaker_en, ferry_en]}}}}
  - {{task: human, options: {{method: process}}}}
  - {{task: human, options: {{method: process, qc_threshold: 0.5}}}}
scoring: {{judge: none}}
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
    mp.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
    mp.setenv("EMOCAUSTICS_ECAC_DATA", _data("EMOCAUSTICS_ECAC_DATA", "ecac", "Subtask_1_test.json"))
    mp.setenv("EMOCAUSTICS_HUMANEVAL_DATA", _data("EMOCAUSTICS_HUMANEVAL_DATA", "humaneval",
                                                  "hits_data_FreeTopicRound1.json"))
    try:
        with RoutedFakeServer(Faults(), routes={m: "invalid" for _, m in FAILS.values()}) as srv:
            (tmp / "job.yaml").write_text(JOB.format(url=srv.base_url), encoding="utf-8")
            return run_job(load_job(tmp / "job.yaml", overrides={"output": str(tmp / "runs")}),
                           out=str(tmp / "run"))
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
    label = "human_process_qc_threshold=0.05"
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


# Per task: the model config with one failing sample, a sample of it that was scored, and the config to compare with.
MODEL = {"ecpe": ("ecpe_direct_api", "1401", "ecpe_oracle"),
         "sextuple": ("sextuple_direct_api", "1", "sextuple_oracle"),
         "emotion": ("emotion_direct_api", "1", "emotion_baseline"),
         "narrative": ("narrative_llm_api", "clockmaker_en", "narrative_files")}


def _gold_texts(task: str, sample_id: str) -> list[str]:
    """Texts of the sample's gold as its dataset holds it (not as the log or the view hold it)."""
    if task == "ecpe":
        convs = json.loads((Path(os.environ.get("EMOCAUSTICS_ECAC_DATA") or SHARED / "ecac")
                            / "Subtask_1_test.json").read_text(encoding="utf-8"))
        conv = next(c for c in convs if str(c["conversation_ID"]) == sample_id)
        return [p[0] for p in conv["emotion-cause_pairs"]]  # "2_surprise": utterance and emotion of each pair
    if task in ("sextuple", "emotion"):
        from emocaustics.tasks.longdialogue.data.load import load_sample

        dialogue = load_sample().dialogues[int(sample_id)]
        if task == "emotion":
            return [ev.event for evs in dialogue.chains.values() for ev in evs]
        return [u.gt.target for u in dialogue.utterances if u.gt is not None and u.gt.target]
    raw = json.loads((REPO / "datasets" / "narrative" / "gt" / f"{sample_id}.json").read_text(encoding="utf-8"))
    return [c["name"] for c in raw["characters"]]


def _items(run_dir: Path, label: str, sample_id: str) -> pl.DataFrame:
    """The scorer's item rows of one sample, read from the run's items.parquet."""
    items = pl.read_parquet(run_dir / "items.parquet").filter(pl.col("run") == label)
    key = "sample_id" if items["sample_id"].null_count() < items.height else "dialogue"
    return items.filter(pl.col(key).cast(pl.Utf8) == sample_id)


def _start(b: Browser, run_dir: Path, view: ViewData, label: str) -> int:
    """Open the exported run at its configs and click `label`'s link: its sample list."""
    assert b.load((run_dir / "view" / "index.html").as_uri()) == []
    _ready(b, "#/")
    b.eval(f"Array.from(document.querySelectorAll('#configs tr.config')).find(r => r.dataset.label === {label!r})"
           ".querySelector('a').click()")
    i = view.labels.index(label)
    _ready(b, f"#/c/{i}")
    return i


def _ids(b: Browser) -> list[str]:
    return b.eval("Array.from(document.querySelectorAll('#samples tr.sample')).map(r => r.dataset.id)")


def _click(b: Browser, i: int, sample_id: str) -> None:
    b.eval(f"Array.from(document.querySelectorAll('#samples tr.sample')).find(r => r.dataset.id === {sample_id!r})"
           ".click()")
    _ready(b, f"#/s/{i}/{b.eval('location.hash').split('/')[-1]}")
    assert _text(b, "#sample-id") == sample_id
    _open_calls(b)


def _open_calls(b: Browser) -> None:
    """Open every call of a long transcript (it shows each call's header until opened): "open all"."""
    b.eval("document.querySelectorAll('button.open-calls').forEach(x => x.click())")
    deadline = time.monotonic() + 20
    while not b.eval("Array.from(document.querySelectorAll('section.call .call-body'))"
                     ".every(d => d.childElementCount > 0)"):
        assert time.monotonic() < deadline, "the calls never opened"
        time.sleep(0.05)


def _compare(b: Browser, view: ViewData, other: str) -> list[str]:
    """Choose `other` in the compare menu: the inner text of both sample views, left and right."""
    k = view.labels.index(other)
    here = b.eval("location.hash")
    _do(b, f"const s = document.getElementById('compare'); s.value = '{k}'; s.dispatchEvent(new Event('change'))")
    _ready(b, f"{here}/{k}")
    _open_calls(b)
    return b.eval("Array.from(document.querySelectorAll('.sample-view')).map(v => v.dataset.config + '\\n' + "
                  "v.innerText)")


@pytest.fixture(scope="module")
def view(run_dir: Path) -> ViewData:
    got = ViewData(RunLog(run_dir))
    export(got, run_dir / "view")
    return got


@pytest.mark.parametrize("task", list(MODEL))
def test_model_task_failures_sample_and_compare(task: str, run_dir: Path, view: ViewData, browser: Browser) -> None:
    label, scored, other = MODEL[task]
    failed, marker = FAILS[task]
    i = _start(browser, run_dir, view, label)
    assert _text(browser, "#count") == "2 of 2 samples"
    _do(browser, "const s = document.getElementById('status'); s.value = 'failed'; "
                 "s.dispatchEvent(new Event('change'))")
    assert _text(browser, "#count") == "1 of 2 samples" and _ids(browser) == [failed]

    # the failed sample: the prompts that carried it, the stand-in's invalid answer, the error, the gold
    _click(browser, i, failed)
    assert marker in _text(browser, "pre.msg")
    answers = _text(browser, "pre.answer")
    assert "抱歉，我无法给出 JSON" in answers
    assert "invalid JSON" in _text(browser, ".call-error") and "invalid JSON" in _text(browser, ".reason")
    assert _text(browser, ".status") == "failed" and _text(browser, "pre.prediction").strip() == "null"
    gold = _text(browser, "pre.gold") + _text(browser, "section table.task-table")
    assert all(g in gold for g in _gold_texts(task, failed)), (_gold_texts(task, failed), gold[:500])
    # beside another config's answer to the same sample: that one was scored
    left, right = _compare(browser, view, other)
    assert left.startswith(f"{label}\n") and "status failed" in left
    assert right.startswith(f"{other}\n") and "status ok" in right and marker in right
    shoot(browser, f"{task}-compare")

    # a scored sample of the same config: its prompt, the stand-in's answer, and the scorer's decisions
    _start(browser, run_dir, view, label)
    _do(browser, "const s = document.getElementById('status'); s.value = 'ok'; s.dispatchEvent(new Event('change'))")
    assert _ids(browser) == [scored]
    _click(browser, i, scored)
    calls = view.log.calls(label).filter(pl.col("sample_id") == scored)
    assert _text(browser, "section.call h3").splitlines() == [f"call {n + 1}" for n in range(calls.height)]
    assert calls["text"][0] in _text(browser, "pre.answer") and not _text(browser, ".call-error")
    gold = _text(browser, "pre.gold") + _text(browser, "section table.task-table")
    assert all(g in gold for g in _gold_texts(task, scored))
    items = _items(run_dir, label, scored)
    assert items.height and f"Item decisions ({items.height})" in _text(browser, "section h3")
    marks = browser.eval("Array.from(document.querySelectorAll('table.items tr')).slice(1).map(r => r.className)")
    assert len(marks) == items.height and set(marks) <= {"ok", "bad", "miss", ""}
    if task == "ecpe":  # every gold pair missed or matched, every predicted pair right or wrong, as the scorer said
        outcomes = browser.eval("Array.from(document.querySelectorAll('table.items tr')).slice(1).map("
                                "r => r.cells[r.cells.length - 1].innerText)")
        assert outcomes == items["outcome"].to_list()
        assert marks == [{"missed": "miss", "wrong": "bad", "correct": "ok"}[o] for o in outcomes]
    shoot(browser, f"{task}-sample")


def test_human_failures_sample_and_compare(run_dir: Path, view: ViewData, browser: Browser) -> None:
    """human calls no model: its failures are the assignments whose worker failed quality control (score 0), found
    with the metric filter; a stricter and a looser threshold are the two configs compared."""
    label, other = "human_process_qc_threshold=0.05", "human_process_qc_threshold=0.5"
    scores = pl.read_parquet(run_dir / "scores.parquet")
    mine = scores.filter(pl.col("run") == label)
    failing = sorted(mine.filter(pl.col("score") == 0.0)["sample_id"].to_list())
    i = _start(browser, run_dir, view, label)
    # the metrics offered are this task's (scores.parquet is one table for the run: other tasks' columns are null)
    offered = browser.eval("Array.from(document.querySelectorAll('#metric option')).map(o => o.value)")
    assert {"score", "c_qc_p", "c_z_qc"} <= set(offered) and not {"c_s2_f1", "c_event_match"} & set(offered)
    _do(browser, "const m = document.getElementById('metric'); m.value = 'score'; m.dispatchEvent(new Event('change'));"
                 "const x = document.getElementById('max'); x.value = '0'; x.dispatchEvent(new Event('input'))")
    assert _text(browser, "#count") == f"{len(failing)} of {mine.height} samples"
    assert sorted(_ids(browser)) == failing
    # an assignment failed at 0.05 that passes at 0.5 (its QC p-value between the two)
    looser = scores.filter(pl.col("run") == other).select("sample_id", pl.col("score").alias("loose"))
    flip = mine.join(looser, on="sample_id").filter((pl.col("score") == 0.0) & (pl.col("loose") == 1.0))
    sid = sorted(flip["sample_id"].to_list())[0]
    _click(browser, i, sid)
    assert "Quality control: failed" in _text(browser, "section h3")
    assert "c_qc_p" in _text(browser, ".sample-view > .meta") and "c_s2_f1" not in _text(browser, ".sample-view > .meta")
    assert "Transcript (0 calls)" in _text(browser, "section h3")  # no model, no prompt
    hits = json.loads((Path(os.environ.get("EMOCAUSTICS_HUMANEVAL_DATA") or SHARED / "humaneval")
                       / "hits_data_FreeTopicRound1.json").read_text(encoding="utf-8"))
    rated = next(a for a in hits["data"] if a["assignment"] == sid)["result"]
    ratings = _rows(browser, "HIT ")
    assert [r["cells"][0] for r in ratings] == [r["model"] for r in rated]
    qc = _rows(browser, "Quality control")
    p = float(qc[0]["cells"][1])
    assert qc[0]["mark"] == "bad" and 0.05 <= p < 0.5 and qc[0]["cells"][2] == "0.0500"
    shoot(browser, "human-sample")
    left, right = _compare(browser, view, other)
    assert "Quality control: failed" in left and "Quality control: passed" in right
    shoot(browser, "human-compare")
