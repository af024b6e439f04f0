"""`emocaustics view` in a real headless Chromium (DevTools protocol, tests/fakes/browser.py), over the eval log of an
AER run against the OpenAI-compatible stand-in: open the run, filter to failures, open the failed sample, read its
prompt, answer, parse error, gold and prediction from the page, compare two configs side by side; then the same from
the static export opened as a file. The page must load without console errors or failed loads. Screenshots go to the
test's tmp dir and runs/test-artifacts/."""

from __future__ import annotations

import os
import shutil
import threading
import time
from pathlib import Path

import pytest

from emocaustics.evallog.read import RunLog
from emocaustics.view.data import ViewData
from emocaustics.view.server import export, make_server
from evallog.aer_job import DOOMED, dataset, document_text, marker, run_job, server
from fakes.browser import REPO, Browser, chromium_or_skip

ARTIFACTS = REPO / "runs" / "test-artifacts"
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("viewrun")
    mp = pytest.MonkeyPatch()
    mp.setenv("EMOCAUSTICS_CACHE", str(tmp / "cache"))
    mp.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
    try:
        dataset(tmp / "data")
        with server() as srv:
            rc, out = run_job(tmp, srv, contexts=("full", "none"))
        assert rc == 3
        return out
    finally:
        mp.undo()


@pytest.fixture
def browser(tmp_path: Path):
    b = Browser(chromium_or_skip(), tmp_path / "profile")
    try:
        yield b
    finally:
        b.close()


def _goto(b: Browser, hash_: str) -> None:
    b.eval(f"location.hash = {hash_!r}")
    _ready(b, hash_)


READY = "(document.body || {dataset: {}}).dataset.ready"  # no body yet while a link's page is loading


def _ready(b: Browser, hash_: str) -> None:
    deadline = time.monotonic() + 20
    while b.eval(READY) != hash_:
        assert b.eval(READY) != "error", b.eval("document.getElementById('main').innerText")
        assert time.monotonic() < deadline, f"page never showed {hash_}"
        time.sleep(0.05)


def shoot(b: Browser, name: str) -> None:
    """A screenshot of the page as `<name>.png` in the folder $EMOCAUSTICS_SCREENSHOTS names (made if missing); no
    screenshot when it is unset (e.g. EMOCAUSTICS_SCREENSHOTS=/tmp/view-shots for a session note)."""
    folder = os.environ.get("EMOCAUSTICS_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        b.screenshot(Path(folder) / f"{name}.png")


def _do(b: Browser, statements: str) -> None:
    b.eval(f"(() => {{ {statements} }})()")  # a scope of its own: `const` names do not pile up in the page


def _text(b: Browser, selector: str) -> str:
    return b.eval(f"Array.from(document.querySelectorAll({selector!r})).map(e => e.innerText).join('\\n')")


def _walk(b: Browser, labels: list[str], shots: Path) -> None:
    """The researcher's path through a run, asserting what the page shows at each step."""
    _ready(b, "#/")
    assert b.eval("document.querySelectorAll('#configs tr.config').length") == 3
    full = labels.index("aer_llm_api_context=full")
    _goto(b, f"#/c/{full}")
    assert _text(b, "#count") == "12 of 12 samples"
    _do(b, "const s = document.getElementById('status'); s.value = 'failed'; s.dispatchEvent(new Event('change'))")
    assert _text(b, "#count") == "1 of 12 samples"
    assert b.eval("Array.from(document.querySelectorAll('#samples tr.sample')).map(r => r.dataset.id)") == [DOOMED]
    _do(b, "const s = document.getElementById('status'); s.value = 'all'; s.dispatchEvent(new Event('change'))")
    _do(b, "const q = document.getElementById('search'); q.value = 'event 11.'; q.dispatchEvent(new Event('input'))")
    assert b.eval("Array.from(document.querySelectorAll('#samples tr.sample')).map(r => r.dataset.id)") == ["q-11"]
    b.eval("document.querySelector('#samples th[data-col=\"seconds\"]').click()")  # sortable by any column
    _do(b, "const q = document.getElementById('search'); q.value = ''; q.dispatchEvent(new Event('input'))")
    b.eval(f"Array.from(document.querySelectorAll('#samples tr.sample')).find(r => r.dataset.id === {DOOMED!r})"
           ".click()")
    j = b.eval("location.hash").split("/")[-1]
    _ready(b, f"#/s/{full}/{j}")
    assert _text(b, "#sample-id") == DOOMED
    prompts = _text(b, "pre.msg")
    assert marker(5) in prompts and document_text(2, 1) in prompts  # the question and its topic's documents
    assert "抱歉，我无法给出 JSON" in _text(b, "pre.answer")  # the raw answer
    assert "no JSON answer" in _text(b, ".parse-error")
    assert '"A"' in _text(b, "pre.gold") and _text(b, "pre.prediction").strip() == "null"
    assert "unreadable answer" in _text(b, ".reason")
    # AER's own view (Report.view_sample): the options with gold and chosen marked, and the credit
    assert "Options: credit 0 (wrong)" in _text(b, "section h3")
    assert b.eval("Array.from(document.querySelectorAll('table.task-table tr.miss')).map(r => r.cells[0].innerText)"
                  ) == ["A"]  # gold, not chosen
    b.screenshot(shots / "view-aer-sample.png")
    shoot(b, "aer-sample")
    other = labels.index("aer_llm_api_context=none")
    _do(b, f"const s = document.getElementById('compare'); s.value = '{other}'; "
           "s.dispatchEvent(new Event('change'))")
    _ready(b, f"#/s/{full}/{j}/{other}")
    views = b.eval("Array.from(document.querySelectorAll('.sample-view')).map(v => v.dataset.config)")
    assert views == ["aer_llm_api_context=full", "aer_llm_api_context=none"]
    right = b.eval("document.querySelectorAll('.sample-view')[1].innerText")
    assert marker(5) in right and document_text(2, 1) not in right  # the same question, asked without documents
    b.screenshot(shots / "view-aer-compare.png")


def test_viewer_served_on_loopback(run_dir: Path, browser: Browser, tmp_path: Path) -> None:
    view = ViewData(RunLog(run_dir))
    httpd = make_server(view)
    assert httpd.server_address[0] == "127.0.0.1"
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        errors = browser.load(f"http://127.0.0.1:{httpd.server_address[1]}/")
        _walk(browser, view.labels, tmp_path)
        from fakes.browser import errors_of

        assert errors == [] and errors_of(browser.events) == [], errors_of(browser.events)
    finally:
        httpd.shutdown()
        httpd.server_close()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    for shot in ("view-aer-sample.png", "view-aer-compare.png"):
        shutil.copyfile(tmp_path / shot, ARTIFACTS / shot)


def test_export_opens_from_file(run_dir: Path, browser: Browser, tmp_path: Path) -> None:
    view = ViewData(RunLog(run_dir))
    page = export(view, tmp_path / "export")
    errors = browser.load(page.as_uri())
    _walk(browser, view.labels, tmp_path)
    assert errors == []


def test_a_long_transcript_opens_collapsed_and_each_call_on_a_click(browser: Browser, tmp_path: Path) -> None:
    """A sample of 60 calls (a window dialogue makes 200): the page lists every call's header at once and builds a
    call's prompt and answer when it is opened; "open all" opens every one. A sample of a few calls shows them open."""
    from emocaustics.evallog.record import Recorder
    from emocaustics.evallog.writer import EvalLog
    from emocaustics.models.base import ChatRequest, Completion

    def result(calls: int) -> dict:
        rec = Recorder()
        for n in range(calls):
            rec.add(ChatRequest(messages=({"role": "system", "content": "the system prompt"},
                                          {"role": "user", "content": f"question number {n}"})),
                    Completion(text=f'{{"answer": "reply {n}"}}', parsed={"answer": f"reply {n}"}), 0.0, 0.01)
        return {"ok": True, "log": rec.to_json()}

    log = EvalLog(tmp_path)
    cfg = log.config("cfg")
    cfg.emit("long", result(60)).result(60)
    cfg.emit("short", result(3)).result(60)
    log.close()
    view = ViewData(RunLog(tmp_path))
    httpd = make_server(view)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        assert browser.load(f"http://127.0.0.1:{httpd.server_address[1]}/") == []
        _ready(browser, "#/")
        j = [str(r["sample_id"]) for r in view.table(0)["rows"]].index("long")
        _goto(browser, f"#/s/0/{j}")
        assert _text(browser, "section.call h3").splitlines() == [f"call {n + 1}" for n in range(60)]
        assert browser.eval("document.querySelectorAll('section.call pre.msg').length") == 0
        browser.eval("document.querySelectorAll('section.call summary')[41].click()")
        deadline = time.monotonic() + 10
        while "question number 41" not in _text(browser, "pre.msg"):
            assert time.monotonic() < deadline, "call 42 never showed its prompt"
            time.sleep(0.05)
        assert '"reply 41"' in _text(browser, "pre.answer") and "question number 40" not in _text(browser, "pre.msg")
        browser.eval("document.querySelector('button.open-calls').click()")
        while browser.eval("document.querySelectorAll('section.call pre.answer').length") < 60:
            assert time.monotonic() < deadline, "open all did not open every call"
            time.sleep(0.05)
        assert "question number 0" in _text(browser, "pre.msg") and "question number 59" in _text(browser, "pre.msg")
        _goto(browser, f"#/s/0/{1 - j}")
        assert _text(browser, "pre.answer").splitlines() == [f'{{"answer": "reply {n}"}}' for n in range(3)]
    finally:
        httpd.shutdown()
        httpd.server_close()
