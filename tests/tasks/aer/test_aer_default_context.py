"""Issue 41 point 16: AER's default context serves the question. `full` keeps a topic's documents in file order up to
the budget (the first few of 15, whatever the question); the default is now `retrieve` (the passages closest to the
question within the budget), a config that names its context keeps it, and the summary says what was kept."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from emocaustics.core.task import ScoreContext, get_task, parse_options
from emocaustics.report.tables import SCORE_COLUMNS, write_tables
from tasks.aer.aer_fixtures import KeywordEmbedder, doc, question, topic, write_dataset

TASK = get_task("aer")
CAUSE = "A storm flooded the harbour of town 1 overnight. The harbour closed in the morning."


def _dataset(root: Path) -> Path:
    """One topic of 15 documents: 14 long ones about nothing in the question, then the one that tells the cause."""
    docs = [doc(i, 1, words=150) for i in range(1, 15)] + [doc(15, 1, content=CAUSE)]
    return write_dataset(root, {"sample": ([question(1, 1, "A"), question(2, 1, "A")], [topic(1, docs)])})


def _prepared(root: Path, **opts):
    options = parse_options(TASK, {"method": "llm", "max_context_tokens": 4096, **opts})
    loaded = TASK.load(TASK.Dataset(split="sample", data=str(root)), options)
    emb = KeywordEmbedder(["harbour", "storm"])
    return TASK.prepare(loaded.samples, options, ScoreContext(embedder=emb)), options


def test_the_default_context_is_retrieval_and_a_named_context_is_kept():
    assert parse_options(TASK, {"method": "llm"}).context == "retrieve"
    for named in ("none", "full", "retrieve"):
        assert parse_options(TASK, {"method": "llm", "context": named}).context == named


def test_the_default_asks_with_the_document_that_tells_the_cause(tmp_path):
    root = _dataset(tmp_path)
    default, _ = _prepared(root)
    full, _ = _prepared(root, context="full")
    trim = default[0].meta["trim"]
    assert trim["rule"] == "retrieve" and trim["docs_total"] == 15
    assert trim["passages"][0]["doc"] == 15 and CAUSE.split(".")[0] in default[0].meta["context"]
    # `full` (what the default was): the first documents in file order, the cause left out
    cut = full[0].meta["trim"]
    assert cut["docs_kept"] + (cut["cut_doc"] is not None) < 15 and "storm" not in full[0].meta["context"]


def _scored_summary(tmp_path: Path, samples, options) -> str:
    preds = {s.id: {"answer": ["A"], "trim": s.meta.get("trim")} for s in samples}
    scored = TASK.score(samples, preds, options, ScoreContext())
    info = scored.tables["sample_info"]
    rows = [{"run": f"aer_llm_m_{options.context}", "task": "aer", "method": "llm", "model": "m", "kind": "model",
             "sample_id": s.id, "weight": 1.0, "score": 1.0, "failed": False, "status": "ok", "reason": None,
             "llm_calls": 1, "cache_hits": 0, "prompt_tokens": 1, "generated_tokens": 1, "seconds": 0.0}
            for s in samples]
    scores = pl.DataFrame(rows, schema_overrides=SCORE_COLUMNS).join(info, on="sample_id")
    out = tmp_path / options.context
    out.mkdir()
    write_tables(out, scores)
    return (out / "summary.md").read_text(encoding="utf-8")


def test_the_summary_shows_the_cut(tmp_path):
    root = _dataset(tmp_path / "data")
    samples, options = _prepared(root, context="full")
    cut = samples[0].meta["trim"]
    kept = cut["docs_kept"] + (cut["cut_doc"] is not None)
    text = _scored_summary(tmp_path, samples, options)
    assert "context_kept" in text.splitlines()[2]  # a column of the main table
    assert f"full: {kept} of 15 documents, ~{cut['tokens_kept']:,} tokens per question (mean)" in text
    samples, options = _prepared(root)
    trims = [s.meta["trim"] for s in samples]
    assert trims[0]["passages"] == trims[1]["passages"]  # the same passages for both questions: the means are theirs
    docs = len({p["doc"] for p in trims[0]["passages"]})
    tokens = round(sum(t["tokens_kept"] for t in trims) / 2)
    assert (f"retrieve: {docs} of 15 documents, ~{tokens:,} tokens ({trims[0]['passages_kept']} passages) per "
            "question (mean)" in _scored_summary(tmp_path, samples, options))
