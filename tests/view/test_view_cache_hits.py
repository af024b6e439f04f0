"""The viewer says which calls the shared response cache answered (issue 42 point 2): a sample whose calls were all
cache hits, one with some, one with none, in a real headless Chromium (tests/fakes/browser.py) over the static
export of an eval log written here."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from emocaustics.evallog.read import RunLog
from emocaustics.view.data import ViewData
from emocaustics.view.server import export
from fakes.browser import Browser, chromium_or_skip

pytestmark = pytest.mark.slow


def test_a_sample_page_counts_its_cache_hits(tmp_path: Path) -> None:
    from emocaustics.evallog.record import Recorder
    from emocaustics.evallog.writer import EvalLog
    from emocaustics.models.base import ChatRequest, Completion

    def result(hits: list[bool]) -> dict:
        rec = Recorder()
        for n, hit in enumerate(hits):
            rec.add(ChatRequest(messages=({"role": "user", "content": f"question {n}"},)),
                    Completion(text=f"reply {n}", cached=hit), 0.0, 0.01)
        return {"ok": True, "log": rec.to_json()}

    log = EvalLog(tmp_path / "run")
    cfg = log.config("cfg")
    for sid, hits in (("all", [True, True]), ("some", [True, False, False]), ("none", [False])):
        cfg.emit(sid, result(hits)).result(60)
    log.close()
    view = ViewData(RunLog(tmp_path / "run"))
    page = export(view, tmp_path / "export")
    browser = Browser(chromium_or_skip(), tmp_path / "profile")
    try:
        assert browser.load(page.as_uri()) == []
        ids = [str(r["sample_id"]) for r in view.table(0)["rows"]]
        for sid, said in (("all", "2 calls (all answered by the response cache)"),
                          ("some", "3 calls (1 answered by the response cache)"), ("none", "1 calls")):
            hash_ = f"#/s/0/{ids.index(sid)}"
            browser.eval(f"location.hash = {hash_!r}")
            deadline = time.monotonic() + 20
            while browser.eval("(document.body || {dataset: {}}).dataset.ready") != hash_:
                assert time.monotonic() < deadline, f"page never showed {hash_}"
                time.sleep(0.05)
            meta = browser.eval("document.querySelector('.sample-view .meta').innerText")
            assert said in meta and (sid != "none" or "response cache" not in meta), meta
    finally:
        browser.close()
