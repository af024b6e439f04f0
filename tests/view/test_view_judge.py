"""The viewer shows a sample's judge calls (issue 56 item 8: the EmoCaustics judge inspectable): the data layer's
sample document carries the judge's model and calls (prompt and answer) apart from the solver's; the page shows them
below the transcript, closed, each opening on a click. The log is written as a job writes it (a solve line, then the
scoring's judge lines under the config's sink), a stand-in judge LLM in process, stand-in embeddings over HTTP."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from emocaustics.core.records import Sample
from emocaustics.evallog import sink
from emocaustics.evallog.read import RunLog
from emocaustics.evallog.record import Recorder
from emocaustics.evallog.writer import EvalLog
from emocaustics.models.base import ChatRequest, Completion
from emocaustics.tasks.longdialogue.score.engine import ascore
from emocaustics.tasks.longdialogue.score.judge import Judge
from emocaustics.view.data import ViewData, script
from evallog.test_evallog_judge import D1, D2, PREDS, CountingJudge
from fakes.openai_embeddings import FakeEmbeddingsServer


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import emocaustics.tasks.longdialogue.score.chains as ch
    import emocaustics.tasks.longdialogue.score.policy as pol

    tmp = tmp_path_factory.mktemp("judged")
    mp = pytest.MonkeyPatch()
    mp.setattr(pol.Policy, "chain_rules", ch.ChainRules(event_threshold=-1.0))  # every pair goes to the judge
    try:
        log = EvalLog(tmp)
        cfg = log.config("emotion_x")
        rec = Recorder()
        rec.add(ChatRequest(messages=({"role": "user", "content": "extract the events of dialogue 1"},)),
                Completion(text='{"events": "solver answer"}'), 0.0, 0.01)
        cfg.emit("1", {"ok": True, "log": rec.finished()}).result(60)
        with FakeEmbeddingsServer() as srv, sink.active(cfg):
            asyncio.run(ascore("emotion", [D1, D2], PREDS, embedder=f"openai:fake-embed@{srv.base_url}",
                               judge=Judge(CountingJudge())))
        samples = [Sample(str(d.id), d) for d in (D1, D2)]
        cfg.finish(samples, {s.id: PREDS[int(s.id)] for s in samples})
        return tmp
    finally:
        mp.undo()


def test_sample_document_has_the_judge_s_model_prompts_and_answers(run_dir: Path) -> None:
    view = ViewData(RunLog(run_dir))
    rows = view.table(0)["rows"]
    one = view.sample(0, [str(r["sample_id"]) for r in rows].index("1"))
    assert [c["text"] for c in one["calls"]] == ['{"events": "solver answer"}']  # the solver's, apart
    judge = one["judge"]
    assert judge["model"] == "stand-in-judge" and len(judge["calls"]) == 2
    asked = sorted(c["messages"][-1]["content"].split("事件B：")[1].split("\n")[0] for c in judge["calls"])
    assert asked == sorted(["口服液的争执", "另一回事"])  # the questions of dialogue 1 only
    assert all(c["step"] == "judge" and json.loads(c["text"])["same"] in (0, 1) for c in judge["calls"])
    doc = script("s/0/0", one)  # the document as the page gets it
    got = json.loads(doc[doc.index(",") + 1:doc.rindex(")")])
    assert got["judge"]["calls"][0]["messages"] == judge["calls"][0]["messages"]
    two = view.sample(0, [str(r["sample_id"]) for r in rows].index("2"))
    assert two["calls"] == [] and len(two["judge"]["calls"]) == 1


@pytest.mark.slow
def test_page_shows_the_judge_calls_below_the_transcript_closed(run_dir: Path, tmp_path: Path) -> None:
    from emocaustics.view.server import export
    from fakes.browser import Browser, chromium_or_skip
    from view.test_view_browser import _goto, _text

    view = ViewData(RunLog(run_dir))
    j = [str(r["sample_id"]) for r in view.table(0)["rows"]].index("1")
    page = export(view, tmp_path / "export")
    b = Browser(chromium_or_skip(), tmp_path / "profile")
    try:
        assert b.load(page.as_uri()) == []
        _goto(b, f"#/s/0/{j}")
        assert "Judge stand-in-judge (2 calls)" in _text(b, ".judge h3")
        order = b.eval("(() => { const t = Array.from(document.querySelectorAll('.sample-view section'))"
                       ".find(s => s.querySelector('h3').innerText.startsWith('Transcript'));"
                       " return !!(t.compareDocumentPosition(document.querySelector('.judge'))"
                       " & Node.DOCUMENT_POSITION_FOLLOWING); })()")
        assert order  # below the solver's transcript
        assert b.eval("document.querySelectorAll('.judge details[open]').length") == 0
        assert _text(b, ".judge pre.msg") == ""  # built when opened
        b.eval("document.querySelector('.judge .open-calls').click()")
        assert "口服液的争执" in _text(b, ".judge pre.msg") and '"same"' in _text(b, ".judge pre.answer")
        assert "solver answer" not in _text(b, ".judge") and "solver answer" in _text(b, "pre.answer")
    finally:
        b.close()
