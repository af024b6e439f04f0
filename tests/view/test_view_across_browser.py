"""`emocaustics view RUN_A RUN_B` (report/across.py) in a real headless Chromium: two AER runs of two different models
over the same 12 questions, each model a stand-in for a remote OpenAI-compatible API (tests/fakes/openai_routed.py).
Model `fake-a` answers the gold "A" (question 5 and 9 with invalid JSON: they fail); model `fake-b` answers "B" to
every third question and "A", "C" to the next (question 9 fails there too). The page lists the questions both runs
have; the filters must list exactly the questions whose scores differ (computed here from the two scores.parquet),
the one where one run failed, the one where both failed; a question's page shows both models' prompts and answers.
`compare --html` links each pair and each sample scored differently to those pages. With EMOCAUSTICS_SCREENSHOTS=DIR
the side-by-side page is saved as DIR/across-sample.png (docs/img/viewer/across-sample.jpg)."""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path

import polars as pl
import pytest

from emocaustics.cli import main
from emocaustics.core.errors import UsageError
from emocaustics.report.across import Across
from emocaustics.view.server import make_server
from evallog.aer_job import dataset, job_yaml, marker
from fakes.browser import Browser, chromium_or_skip, errors_of
from fakes.openai_chat import Faults
from fakes.openai_routed import RoutedFakeServer
from view.test_view_browser import _do, _goto, _ready, _text, shoot

pytestmark = pytest.mark.slow
LLM = "aer_llm_api_context=full"


class OtherModel(RoutedFakeServer):
    """A second remote model that answers some questions otherwise: "B" to question 3, 6, 9, 12, "A" and "C" to
    question 1, 4, 7, 10 (read from the question's text in the prompt), the gold "A" to the rest."""

    def answer_text(self, body: dict) -> str:
        text = super().answer_text(body)
        asked = re.findall(r"after event (\d+)\.", json.dumps(body.get("messages", []), ensure_ascii=False))
        n = int(asked[-1]) if asked else 0
        got = json.loads(text)
        if isinstance(got, dict) and "answer" in got:
            got["answer"] = ["B"] if n % 3 == 0 else ["A", "C"] if n % 3 == 1 else got["answer"]
        return json.dumps(got, ensure_ascii=False)


def _run(tmp: Path, name: str, srv: RoutedFakeServer, model: str) -> Path:
    job = tmp / f"{name}.yaml"
    job.write_text(job_yaml(tmp / "data", srv.base_url).replace("fake-chat", model), encoding="utf-8")
    out = tmp / name / "run"
    assert main(["run", str(job), "--out", str(out)]) == 3  # samples failed: exit 3, the run is written
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("across")
    mp = pytest.MonkeyPatch()
    mp.setenv("EMOCAUSTICS_CACHE", str(tmp / "cache"))
    mp.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
    try:
        dataset(tmp / "data")
        with RoutedFakeServer(Faults(), routes={marker(5): "invalid", marker(9): "invalid"}) as a:
            run_a = _run(tmp, "a", a, "fake-a")
        with OtherModel(Faults(), routes={marker(9): "invalid"}) as b:
            run_b = _run(tmp, "b", b, "fake-b")
        return run_a, run_b
    finally:
        mp.undo()


def _scores(run: Path) -> dict[str, float]:
    """The LLM config's score per question as the run's own table holds it (a failed question counts 0)."""
    got = pl.read_parquet(run / "scores.parquet").filter(pl.col("run") == LLM)
    return {r["sample_id"]: (0.0 if r["failed"] else r["score"]) for r in got.iter_rows(named=True)}


@pytest.fixture
def browser(tmp_path: Path):
    b = Browser(chromium_or_skip(), tmp_path / "profile")
    try:
        yield b
    finally:
        b.close()


def _ids(b: Browser) -> list[str]:
    return b.eval("Array.from(document.querySelectorAll('#across tr.sample')).map(r => r.dataset.id)")


def _filter(b: Browser, name: str) -> list[str]:
    _do(b, f"const s = document.getElementById('filter'); s.value = {name!r}; s.dispatchEvent(new Event('change'))")
    return _ids(b)


def test_two_models_side_by_side(runs: tuple[Path, Path], browser: Browser, tmp_path: Path) -> None:
    a, b = _scores(runs[0]), _scores(runs[1])
    assert a.keys() == b.keys() and len(a) == 12
    differ = sorted((q for q in a if a[q] != b[q]), key=lambda q: int(q.split("-")[1]))
    assert len(differ) >= 4  # the two models really answer differently
    across = Across(list(runs))
    httpd = make_server(across)
    assert httpd.server_address[0] == "127.0.0.1"
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        errors = browser.load(f"http://127.0.0.1:{httpd.server_address[1]}/")
        _ready(browser, "#/")
        assert _text(browser, "#runs").count("fake-a") == 1 and "fake-b" in _text(browser, "#runs")
        g = across.group_of(across.names[0], LLM)
        assert _text(browser, f"#groups tr.group[data-g='{g}']").count(LLM) == 2
        browser.eval(f"document.querySelector(\"#groups tr.group[data-g='{g}'] a\").click()")
        _ready(browser, f"#/x/{g}")
        heads = _text(browser, "#across th.member")
        assert "fake-a" in heads and "fake-b" in heads
        assert _text(browser, "#count") == "12 of 12 samples"
        assert _filter(browser, "scores differ") == differ
        assert set(differ) <= set(_filter(browser, "runs disagree"))
        assert _filter(browser, "one failed") == ["q-5"]
        assert _filter(browser, "all failed") == ["q-9"]
        assert _filter(browser, "missing in a run") == []
        _do(browser, "const t = document.getElementById('tol'); t.value = '0.75'; t.dispatchEvent(new Event('input'))")
        assert _filter(browser, "scores differ") == [q for q in differ if abs(a[q] - b[q]) > 0.75]
        q = next(q for q in differ if q != "q-5")
        k = [r["sample_id"] for r in across.table(g)["rows"]].index(q)
        browser.eval(f"Array.from(document.querySelectorAll('#across tr.sample')).find(r => r.dataset.id === {q!r})"
                     ".click()")
        _ready(browser, f"#/x/{g}/{k}")
        assert _text(browser, "#sample-id") == q
        heads = _text(browser, ".member-head").splitlines()
        assert [LLM in h for h in heads] == [True, True] and heads[0].startswith(across.names[0])
        assert "fake-a" in heads[0] and "fake-b" not in heads[0] and "fake-b" in heads[1]  # each run's model
        cols = browser.eval("Array.from(document.querySelectorAll('.member-col')).map(c => c.innerText)")
        n = int(q.split("-")[1])
        assert len(cols) == 2 and all(marker(n) in c for c in cols)  # each model's prompt of the question
        answers = browser.eval("Array.from(document.querySelectorAll('.member-col')).map(c => Array.from("
                               "c.querySelectorAll('pre.answer')).map(p => p.innerText).join('|'))")
        assert '"A"' in answers[0] and ('"B"' in answers[1] or '"C"' in answers[1])  # each model's own answer
        shoot(browser, "across-sample")
        shown = [x for x in differ if abs(a[x] - b[x]) > 0.75]  # the list's filter: previous / next walk through it
        after = shown[shown.index(q) + 1]
        browser.eval("document.getElementById('next').click()")
        _ready(browser, f"#/x/{g}/{[r['sample_id'] for r in across.table(g)['rows']].index(after)}")
        assert _text(browser, "#sample-id") == after
        _goto(browser, f"#/x/{g}/{[r['sample_id'] for r in across.table(g)['rows']].index('q-5')}")
        assert "unreadable answer" in _text(browser, ".member-col[data-run] .reason")  # run a's failure reason
        assert errors == [] and errors_of(browser.events) == [], errors_of(browser.events)
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_compare_links_open_the_pair_and_its_samples(runs: tuple[Path, Path], browser: Browser,
                                                     tmp_path: Path) -> None:
    out = tmp_path / "cmp"
    assert main(["compare", str(runs[0]), str(runs[1]), "--html", str(out)]) == 0
    a, b = _scores(runs[0]), _scores(runs[1])
    page = (out / "compare.html").as_uri()
    assert browser.load(page) == []
    pairs = browser.eval("Array.from(document.querySelectorAll('#pairs tr.pair')).map(r => r.innerText)")
    n = next(i for i, text in enumerate(pairs) if LLM in text)
    listed = browser.eval(f"Array.from(document.querySelectorAll('#differ-{n} tr.sample')).map(r => "
                          "r.cells[0].innerText)")
    assert sorted(listed) == sorted(q for q in a if a[q] != b[q])
    browser.eval(f"document.querySelectorAll('#pairs tr.pair')[{n}].querySelector('a.pair-link').click()")
    across = Across(list(runs))
    g = across.group_of(across.names[0], LLM)
    _ready(browser, f"#/x/{g}")
    assert _text(browser, "#count") == "12 of 12 samples" and LLM in _text(browser, "#across th.member")
    browser.load(page)
    q = listed[0]
    browser.eval(f"Array.from(document.querySelectorAll('#differ-{n} a.sample-link')).find(x => x.innerText === "
                 f"{q!r}).click()")
    k = [r["sample_id"] for r in across.table(g)["rows"]].index(q)
    _ready(browser, f"#/x/{g}/{k}")
    assert _text(browser, "#sample-id") == q and len(_text(browser, ".member-head").splitlines()) == 2


def test_not_a_run_and_no_shared_sample_are_named(runs: tuple[Path, Path], tmp_path: Path, capsys) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(UsageError, match=f"{plain} is not a finished run folder"):
        Across([runs[0], plain])
    assert main(["view", str(runs[0]), str(tmp_path / "gone")]) == 2
    assert f"{tmp_path / 'gone'}: no such folder" in capsys.readouterr().err
    other = tmp_path / "other" / "run"  # run b with every sample id changed: no question is in both runs
    other.mkdir(parents=True)
    for name in ("evallog", "configs.json"):
        src = runs[1] / name
        (other / name).symlink_to(src, target_is_directory=src.is_dir())
    pl.read_parquet(runs[1] / "scores.parquet").with_columns((pl.lit("z-") + pl.col("sample_id")).alias("sample_id")).write_parquet(
        other / "scores.parquet")
    with pytest.raises(UsageError, match="share no sample") as got:
        Across([runs[0], other])
    assert str(runs[0]) in str(got.value) and str(other) in str(got.value)
    assert main(["view", str(runs[0]), "--pair", "a", "b"]) == 2
