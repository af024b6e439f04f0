"""`emocaustics ui` in a real headless Chromium (DevTools protocol, tests/fakes/browser.py): files are picked through
the page's <input type=file> (DOM.setFileInputFiles, what a person's file dialog does), buttons are clicked, and what
the page shows is compared with what the command line prints or writes for the same file:
- a human round of ../shared/datasets/humaneval processed: the page's tables and the job's files equal `human process`'s;
  two rounds replicated: the same correlations as `human replicate`; a raw MTurk CSV made from round 1 (with its
  metadata JSON) gives the same tables;
- an AER and an ECPE submission scored: the page's figures equal `score aer` / `score ecpe --json`;
- broken submissions (AER, ECPE): every problem is listed, not the first;
- paths outside the root (.., absolute, a symbolic link out) are refused on the page;
- cancel stops a long job (the sextuple scorer on the whole set): its worker process is gone;
- a run folder under the root opens in the viewer;
- an LLM judge put through a round (`eval dialogue-judge` against a loopback stand-in endpoint): the score the page
  shows is summary.csv's.
Screenshots go to docs/img/ui-*.png (docs/workbench.md shows them)."""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from emocaustics.cli import main
from emocaustics.ui.server import Workbench, make_server
from fakes.browser import REPO, Browser, chromium_or_skip

pytestmark = pytest.mark.slow
HUMAN = REPO.parent / "shared" / "datasets" / "humaneval"
BAD = REPO / "tests" / "badinput"
SHOTS = REPO / "docs" / "img"
AER_BROKEN = ('{"id": "q-1", "answer": "A,E"}\n{"id": "q-2"}\nnot json\n{"id": "q-9", "answer": "A"}\n'
              '{"id": "q-3", "answer": "B"}\n{"id": "q-3", "answer": "C"}\n')
ECPE_BROKEN = [{"conversation_ID": 1, "emotion-cause_pairs": [["2_happiness", "1_0_4"], ["3_joy", "3_1_5"]]},
               {"conversation_ID": 2, "emotion-cause_pairs": [["2_surprise", "1_0_99"], ["2_fear", "1_a_b"]]},
               {"conversation_ID": 3, "emotion-cause_pairs": ["1_anger"]}]


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory):
    if not HUMAN.is_dir():
        pytest.skip(f"no human-assessment data at {HUMAN}")
    tmp = tmp_path_factory.mktemp("workbench")
    root = tmp / "root"
    shutil.copytree(HUMAN, root / "humaneval")
    shutil.copytree(BAD / "aer" / "_base", root / "aer")
    shutil.copytree(BAD / "ecpe" / "_base", root / "ecpe")
    (root / "broken").mkdir()
    (root / "broken" / "submission.jsonl").write_text(AER_BROKEN, encoding="utf-8")
    (root / "broken" / "Subtask_1_pred.json").write_text(json.dumps(ECPE_BROKEN), encoding="utf-8")
    (tmp / "secret.json").write_text("{}", encoding="utf-8")
    (root / "link-out.json").symlink_to(tmp / "secret.json")
    wb = Workbench(root, tmp / "out", main)
    server = make_server(wb, 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    wb.url = f"http://127.0.0.1:{server.server_address[1]}/"
    wb.tmp = tmp
    try:
        yield wb
    finally:
        server.shutdown()
        server.server_close()
        wb.close()


@pytest.fixture
def page(bench: Workbench, tmp_path: Path):
    b = Browser(chromium_or_skip(), tmp_path / "profile")
    try:
        assert b.load(bench.url) == []
        _wait(b, "document.body.dataset.ready === '1'")
        yield b
    finally:
        b.close()


def _wait(b: Browser, condition: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not b.eval(condition):
        assert not b.eval("document.body.dataset.error"), b.eval("document.body.dataset.error")
        assert time.monotonic() < deadline, f"never: {condition}"
        time.sleep(0.1)


def _files(b: Browser, selector: str, paths: list[Path]) -> None:
    """Set an <input type=file> as a file dialog does."""
    doc = b.call("DOM.getDocument")
    node = b.call("DOM.querySelector", nodeId=doc["root"]["nodeId"], selector=selector)
    b.call("DOM.setFileInputFiles", files=[str(p) for p in paths], nodeId=node["nodeId"])


def _set(b: Browser, fields: dict[str, str]) -> None:
    for selector, value in fields.items():
        b.eval(f"document.querySelector({selector!r}).value = {value!r}")


def _run(b: Browser, tab: str, button: str, *, finished: bool = True) -> str:
    """Click `button` on `tab`; the new job's id (once it is no longer running, unless finished=False)."""
    before = b.eval("document.body.dataset.job || ''")
    b.eval(f"location.hash = '#{tab}'")
    b.eval(f"document.querySelector({button!r}).click()")
    _wait(b, f"(document.body.dataset.job || '') !== {before!r}")
    if finished:
        _wait(b, "document.body.dataset.state !== 'running'", timeout=300)
    return b.eval("document.body.dataset.job")


def _job(bench: Workbench, job: str) -> dict:
    return json.loads(urllib.request.urlopen(f"{bench.url}api/jobs/{job}").read())


def _shoot(b: Browser, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    b.screenshot(SHOTS / f"ui-{name}.png")


def _cli_json(argv: list[str], capsys) -> dict:
    capsys.readouterr()
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_a_human_round_has_the_numbers_of_human_process(bench: Workbench, page: Browser, tmp_path: Path,
                                                        capsys) -> None:
    hits = bench.folders.root / "humaneval" / "hits_data_FreeTopicRound1.json"
    _files(page, "#hits-file", [hits])
    job = _run(page, "human", "#process-go")
    assert page.eval("document.body.dataset.state") == "done", page.eval("document.getElementById('job').innerText")
    assert main(["human", "process", str(hits), "--out", str(tmp_path / "cli")]) == 0
    ran = bench.folders.out / "jobs" / job / "run"
    for stem in ("system_scores", "system_raw_scores", "passrate", "duration", "sig_test", "rater_agreement"):
        assert (ran / f"{stem}.csv").read_bytes() == (tmp_path / "cli" / f"{stem}.csv").read_bytes(), stem
    shown = page.eval("[...document.querySelectorAll('#job table')][0].innerText")
    for line in (tmp_path / "cli" / "system_scores.csv").read_text(encoding="utf-8").splitlines()[1:]:
        model, n, z = line.split(",")[:3]
        assert f"{model}\t{n}\t{float(z):.4f}" in shown, (model, shown)
    passed = json.loads((tmp_path / "cli" / "summary.json").read_text(encoding="utf-8"))["passrate"]["Worker"]
    assert f"Worker\t{passed['passed']}\t{passed['total']}\t{passed['passrate']:.4f}" in page.eval(
        "document.getElementById('job').innerText")
    assert page.eval("[...document.images].every(i => i.complete && i.naturalWidth > 0)")
    _shoot(page, "human")
    # the second round by a path under the root, then the self-replication of the two processed runs
    _set(page, {"#hits-path": "humaneval/hits_data_FreeTopicRound2.json"})
    page.eval("document.querySelector('#hits-file').value = ''")
    second = _run(page, "human", "#process-go")
    _set(page, {"#run1": f"out:jobs/{job}/run", "#run2": f"out:jobs/{second}/run"})
    replicated = _run(page, "human", "#replicate-go")
    assert main(["human", "process", str(hits.with_name("hits_data_FreeTopicRound2.json")), "--out",
                 str(tmp_path / "cli2")]) == 0
    assert main(["human", "replicate", str(tmp_path / "cli"), str(tmp_path / "cli2"), "--out",
                 str(tmp_path / "rep")]) == 0
    got = bench.folders.out / "jobs" / replicated / "replication" / "corr_zscore_r1r2.csv"
    assert got.read_bytes() == (tmp_path / "rep" / "corr_zscore_r1r2.csv").read_bytes()
    assert "pearson" in page.eval("document.getElementById('job').innerText")
    _shoot(page, "replicate")


def test_a_raw_mturk_csv_has_the_numbers_of_the_json(bench: Workbench, page: Browser, tmp_path: Path) -> None:
    from tests.fakes.mturk_csv import write_mturk_csv

    hits = bench.folders.root / "humaneval" / "hits_data_FreeTopicRound1.json"
    batch = write_mturk_csv(json.loads(hits.read_text(encoding="utf-8")), tmp_path / "Combined_Batches.csv")
    _files(page, "#hits-file", [batch])
    _files(page, "#meta-file", [hits])
    job = _run(page, "human", "#process-go")
    assert page.eval("document.body.dataset.state") == "done", page.eval("document.getElementById('job').innerText")
    assert main(["human", "process", str(hits), "--out", str(tmp_path / "cli")]) == 0
    ran = bench.folders.out / "jobs" / job / "run"
    for stem in ("system_scores", "system_raw_scores", "passrate", "duration", "sig_test", "rater_agreement"):
        assert (ran / f"{stem}.csv").read_bytes() == (tmp_path / "cli" / f"{stem}.csv").read_bytes(), stem
    shown = page.eval("[...document.querySelectorAll('#job table')][0].innerText")
    for line in (tmp_path / "cli" / "system_scores.csv").read_text(encoding="utf-8").splitlines()[1:]:
        model, n, z = line.split(",")[:3]
        assert f"{model}\t{n}\t{float(z):.4f}" in shown, (model, shown)


def test_aer_and_ecpe_submissions_score_as_score_does(bench: Workbench, page: Browser, capsys) -> None:
    root = bench.folders.root
    _files(page, "#pred-file", [root / "aer" / "submission.jsonl"])
    _set(page, {"#task": "aer", "#data-path": "aer/data", "#split": "sample"})
    job = _job(bench, _run(page, "submission", "#score-go"))
    cli = _cli_json(["score", "aer", "--pred", str(root / "aer" / "submission.jsonl"), "--split", "sample",
                     "--data", str(root / "aer" / "data"), "--json"], capsys)
    assert job["steps"][1]["json"] == cli
    figures = page.eval("document.querySelector('[data-step=score] table.figures').innerText")
    assert f"score\t{cli['score']:.4f}" in figures and f"exact_match\t{cli['exact_match']}" in figures
    assert page.eval("document.querySelector('[data-step=validate] .verdict').innerText") == "valid"
    # ECPE: both subtasks' files picked together (one upload folder), scored against the gold of a folder
    page.eval("document.querySelector('#pred-file').value = ''")
    _files(page, "#pred-file", sorted((root / "ecpe" / "pred").glob("*.json")))
    _set(page, {"#task": "ecpe", "#data-path": "ecpe/gold"})
    job = _job(bench, _run(page, "submission", "#score-go"))
    cli = _cli_json(["score", "ecpe", "--pred", str(root / "ecpe" / "pred"), "--data", str(root / "ecpe" / "gold"),
                     "--json"], capsys)
    assert job["state"] == "done" and job["steps"][1]["json"] == cli
    figures = page.eval("document.querySelector('[data-step=score] table.figures').innerText")
    for key in ("weighted_strict_f1", "weighted_Proportional_f1", "f1_pair"):
        assert f"{key}\t{cli[key]:.4f}" in figures, (key, figures)
    _shoot(page, "submission")


def test_a_broken_submission_shows_every_problem(bench: Workbench, page: Browser) -> None:
    _set(page, {"#task": "aer", "#pred-path": "broken/submission.jsonl", "#data-path": "aer/data", "#split": "sample"})
    job = _job(bench, _run(page, "submission", "#score-go"))
    assert job["state"] == "failed" and [s["status"] for s in job["steps"]] == [2, None]  # not scored
    listed = page.eval("[...document.querySelectorAll('[data-step=validate] ul.problems li')].map(li => li.innerText)"
                       ".filter(t => !t.startsWith('emocaustics: error'))")
    assert len(listed) == 5, listed
    for where in ("line 1 (q-1), field 'answer'", "line 2, field 'answer': missing", "line 3: not JSON",
                  "line 4, field 'id': 'q-9'", "line 6, field 'id': 'q-3' again"):
        assert sum(where in item and "submission.jsonl" in item for item in listed) == 1, (where, listed)
    _set(page, {"#task": "ecpe", "#pred-path": "broken/Subtask_1_pred.json", "#data-path": "ecpe/gold"})
    job = _job(bench, _run(page, "submission", "#score-go"))
    listed = page.eval("[...document.querySelectorAll('[data-step=validate] ul.problems li')].map(li => li.innerText)")
    errors = [item for item in listed if ": error " in item]
    assert job["state"] == "failed" and len(errors) == 3, listed
    for conversation, pair in ((1, 1), (2, 2), (3, 1)):
        assert any(f"Subtask_1_pred.json, conversation {conversation}, pair {pair}" in item for item in errors), listed
    assert any("conversation 2, pair 1" in item and "warning index_out_of_range" in item for item in listed)
    _shoot(page, "problems")


@pytest.mark.parametrize("typed, says", [("../secret.json", "'..' leaves"), ("/etc/passwd", "an absolute path"),
                                         ("link-out.json", "a symbolic link to")])
def test_a_path_outside_the_root_is_refused(bench: Workbench, page: Browser, typed: str, says: str) -> None:
    _set(page, {"#task": "aer", "#pred-path": typed, "#data-path": "aer/data"})
    jobs = sorted((bench.folders.out / "jobs").iterdir()) if (bench.folders.out / "jobs").is_dir() else []
    page.eval("location.hash = '#submission'; document.querySelector('#score-go').click()")
    deadline = time.monotonic() + 20
    while not page.eval("document.getElementById('error').innerText"):
        assert time.monotonic() < deadline, "no message on the page"
        time.sleep(0.05)
    message = page.eval("document.getElementById('error').innerText")
    assert says in message and "refused outside it" in message, message
    now = sorted((bench.folders.out / "jobs").iterdir()) if (bench.folders.out / "jobs").is_dir() else []
    assert now == jobs  # nothing started, no folder left behind
    if typed.startswith(".."):
        _shoot(page, "refused")


def test_cancel_stops_a_long_job(bench: Workbench, page: Browser) -> None:
    if not os.environ.get("EMOCAUSTICS_DATA"):
        pytest.skip("EMOCAUSTICS_DATA names no EmoCaustics data set (the whole set is the long job)")
    _set(page, {"#task": "sextuple", "#pred-path": "baseline", "#data-path": "", "#subset": "all"})
    job = _run(page, "submission", "#score-go", finished=False)
    _wait(page, "document.getElementById('cancel') !== null")
    time.sleep(3)  # into the scorer's start
    pid = _job(bench, job)["pid"]
    assert _job(bench, job)["state"] == "running"
    page.eval("document.getElementById('cancel').click()")
    _wait(page, "document.body.dataset.state === 'cancelled'", timeout=30)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert _job(bench, job)["steps"][0]["status"] is None  # the scorer never finished


def test_a_judge_is_put_through_a_round_as_eval_does(bench: Workbench, page: Browser, monkeypatch) -> None:
    """The judge form runs `eval dialogue-judge` on a folder of conversations under the root, against an endpoint (a
    loopback stand-in for an OpenAI-compatible API that answers each conversation's worker ratings plus noise); the
    page shows the score line `eval` prints, and it is summary.csv's score."""
    import re

    import polars as pl

    from emocaustics.core.task import get_task
    from fakes.noisy_judge import NoisyJudge
    from tasks.dialoguejudge.conftest import write_subset

    data = write_subset(bench.folders.root / "judge-round", 40)  # every 40th worker of round 1
    task = get_task("dialogue-judge")
    samples = task.load(task.Dataset(data=str(data)), task.Options(method="llm")).samples
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")  # the workbench's environment: its jobs' keys
    with NoisyJudge(samples, seed=3) as server:
        _set(page, {"#judge-model": f"openai:noisy-judge@{server.base_url}", "#judge-round": "FreeTopicRound1",
                    "#judge-data": "judge-round"})
        job = _run(page, "human", "#judge-go")
        assert len(server.bodies) == len(samples)
    shown = page.eval("document.getElementById('job').innerText")
    assert page.eval("document.body.dataset.state") == "done", shown
    run = bench.folders.out / "jobs" / job / "run"
    summary = pl.read_csv(run / "summary.csv").row(0, named=True)
    printed = re.search(r"\] system_r (-?[0-9.]+), 0 failures, (\d+) samples", shown)
    assert printed, shown
    assert float(printed[1]) == pytest.approx(summary["score"], abs=5e-5) and int(printed[2]) == len(samples)
    assert summary["score"] > 0.5 and f"out/jobs/{job}/run/report.html" in shown
    _shoot(page, "judge")


JOB = """name: ui-run
dataset:
  aer: {{split: sample, data: "{data}"}}
runs:
  - {{task: aer, options: {{method: oracle}}}}
scoring: {{judge: none}}
"""


def test_a_run_folder_opens_in_the_viewer(bench: Workbench, page: Browser) -> None:
    root = bench.folders.root
    job = bench.tmp / "job.yaml"
    job.write_text(JOB.format(data=root / "aer" / "data"), encoding="utf-8")
    assert main(["run", str(job), "--out", str(root / "runs" / "aer-oracle")]) == 0
    page.load(bench.url)
    _wait(page, "document.body.dataset.ready === '1'")
    page.eval("location.hash = '#runs'")
    assert page.eval("[...document.querySelectorAll('#runs code')].map(c => c.innerText)") == ["runs/aer-oracle"]
    _shoot(page, "runs")
    page.eval("document.querySelector('[data-run]').click()")
    _wait(page, "document.body.dataset.viewer !== undefined", timeout=30)
    url = page.eval("document.body.dataset.viewer")
    assert url.startswith("http://127.0.0.1:")
    index = urllib.request.urlopen(url + "data/index.js").read().decode("utf-8")
    assert "aer" in index
