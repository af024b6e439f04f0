"""`AerTask.prepare` works from what `AerTask.load` read: each question's documents and its drawn examples travel in
the loaded sample (`meta["documents"]`, `meta["shots"]`), so the prepare step parses and looks up no split again."""

from __future__ import annotations

import pytest

from emocaustics.core.errors import UsageError
from emocaustics.core.task import ScoreContext, get_task, parse_options
from emocaustics.tasks.aer import data
from tasks.aer.aer_fixtures import KeywordEmbedder, question, standard_dataset, topic, write_dataset

TASK = get_task("aer")


@pytest.mark.parametrize("prompt,context", [("few-shot", "full"), ("few-shot", "retrieve"), ("zero-shot", "none")])
def test_prepare_reads_no_split(tmp_path, monkeypatch, prompt, context) -> None:
    opts = parse_options(TASK, {"method": "llm", "prompt": prompt, "context": context})
    loaded = TASK.load(TASK.Dataset(split="sample", data=str(standard_dataset(tmp_path))), opts)
    reads: list[tuple] = []
    cached = data._load_cached
    monkeypatch.setattr(data, "_load_cached", lambda *a: reads.append(a) or cached(*a))
    prepared = TASK.prepare(loaded.samples, opts, ScoreContext(embedder=KeywordEmbedder(["storm"])))
    assert reads == []
    assert all("documents" not in s.meta for s in prepared)  # the Topic stays on the driver
    assert [bool(s.meta["shots"]) for s in prepared] == [prompt == "few-shot"] * len(prepared)


def test_a_pool_without_examples_outside_the_topic_is_said_when_preparing(tmp_path) -> None:
    root = write_dataset(tmp_path, {"sample": ([question(1, 1), question(2, 1)], [topic(1)]),
                                    "dev": ([question(10, 1, "B")], None)})
    opts = parse_options(TASK, {"method": "llm", "prompt": "few-shot", "context": "none"})
    loaded = TASK.load(TASK.Dataset(split="sample", data=str(root)), opts)
    with pytest.raises(UsageError, match="split 'dev' has no solved questions outside topic 1 for few-shot examples"):
        TASK.prepare(loaded.samples, opts, ScoreContext())
