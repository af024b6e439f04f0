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


def test_documents_are_embedded_with_a_progress_line(tmp_path, capsys, monkeypatch):
    """Off a terminal (a log, `ray job logs`) the line is printed before the first batch (the embedder's load comes
    first), at most every 10 s and at the end; the vectors are those of one call, kept (models/embedstore.py); a second
    config on the same embedder embeds nothing again and prints nothing."""
    import numpy as np

    from emocaustics.core.task import ScoreContext
    from emocaustics.models.cacheplace import CacheChoice, shared_folder
    from emocaustics.models import embedstore
    from emocaustics.models.embedders import normalise_rows
    from emocaustics.tasks.aer import context, retrieve
    from tasks.aer.aer_fixtures import KeywordEmbedder, doc, question, topic, write_dataset

    monkeypatch.setattr(embedstore, "EMBED_BATCH", 2)
    docs = [doc(i, 1, content=f"Report {i}: a storm in town 1." if i % 2 else "The council met.") for i in range(1, 6)]
    root = write_dataset(tmp_path, {"sample": ([question(1, 1), question(2, 1)], [topic(1, docs)])})
    opts = parse_options(TASK, {"method": "llm", "context": "retrieve", "top_k": 2})
    samples = TASK.load(TASK.Dataset(split="sample", data=str(root)), opts).samples
    emb = KeywordEmbedder(["storm", "council"])
    TASK.prepare(samples, opts, ScoreContext(embedder=emb, cache=CacheChoice(shared_folder())))
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("[embed documents")]
    assert emb.calls == [2, 2, 1, 2]  # the 5 passages 2 at a time, then the 2 queries
    assert [line.split("] ")[1].split()[0] for line in lines] == ["0/5", "5/5"], lines
    assert lines[0].startswith("[embed documents of 1 topic(s)]")
    from emocaustics.models.embedstore import EmbeddingStore

    from emocaustics.tasks.aer.data import load_split

    topic1 = load_split(str(root), "sample").topics[1]
    texts = [context.chunk_text(c) for c in context.chunk_topic(topic1, opts.chunk_tokens, opts.chars_per_token)]
    kept = EmbeddingStore(shared_folder()).get_many(emb.identity, texts)
    assert np.allclose(np.stack([kept[i] for i in range(len(texts))]), normalise_rows(
        np.asarray(retrieve.run_sync(KeywordEmbedder(["storm", "council"]).embed(texts)))))
    TASK.prepare(samples, opts, ScoreContext(embedder=emb, cache=CacheChoice(shared_folder())))
    assert emb.calls[4:] == [] and "[embed documents" not in capsys.readouterr().out
