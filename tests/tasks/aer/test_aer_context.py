"""Approximate token counts, the full-context trim rule, chunking and retrieval (worked by hand)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from emocaustics.core.task import ScoreContext, get_task, parse_options
from emocaustics.models.embedstore import embed_kept
from emocaustics.tasks.aer import retrieve
from emocaustics.tasks.aer.context import (CUT_MARK, approx_tokens, chunk_topic, cut_to_tokens, document_text,
                                           render_full)
from emocaustics.tasks.aer.data import Document, Topic
from emocaustics.tasks.aer.solver import ANSWER_BUDGETS
from tasks.aer.aer_fixtures import KeywordEmbedder, doc, question, standard_dataset, topic, write_dataset


def test_approx_tokens_pieces() -> None:
    # The(1) harbour(ceil 7/4 = 2) closed(2) in(1) 2,0,2,0(4 digits) .(1) = 11
    assert approx_tokens("The harbour closed in 2020.") == 11
    # with 1 char per token every letter counts: 3+7+6+2 + 4 + 1 = 23
    assert approx_tokens("The harbour closed in 2020.", 1.0) == 23
    assert approx_tokens("港口关闭") == 4  # one per CJK character
    assert approx_tokens("") == 0


def test_cut_never_inside_a_piece() -> None:
    # alpha(2) beta(1) gamma(2): a budget of 4 keeps "alpha beta" (3); gamma would make 5
    assert cut_to_tokens("alpha beta gamma", 4) == ("alpha beta", 3)
    assert cut_to_tokens("alpha beta gamma", 1) == ("", 0)  # alpha alone needs 2
    head, n = cut_to_tokens("internationalisation rules", 5)  # the long word needs ceil(20/4) = 5
    assert head == "internationalisation" and n == 5


def _topic() -> Topic:
    words = lambda k: " ".join(["wxyz"] * k)  # noqa: E731 (each word one token)
    return Topic(1, "T", (Document("T1", words(2)), Document("T2", words(10)), Document("T3", words(2))))


def test_trim_rule_worked_example() -> None:
    t = _topic()
    # "[Document i] Ti\n" = [(1) Document(2) i(1) ](1) T(1) i(1) = 7, plus the words, plus 1 separator:
    # doc1 7+2+1 = 10, doc2 7+10+1 = 18, doc3 10: 38 in all
    assert approx_tokens(document_text(1, "T1", "wxyz wxyz")) == 9
    text, trim = render_full(t, 25, 4.0)
    # doc1 fits (10); doc2 (18) does not: room = 25 - 10 - 1 (separator) - 6 (" [... cut]") = 8 = its header (7) and
    # one word; doc3 is left out. Used 10 + 8 + 6 + 1 = 25.
    assert approx_tokens(CUT_MARK) == 6
    assert text == document_text(1, "T1", "wxyz wxyz") + "\n\n[Document 2] T2\nwxyz" + CUT_MARK
    assert (trim.budget, trim.tokens_total, trim.tokens_kept, trim.docs_total, trim.docs_kept, trim.cut_doc) == (
        25, 38, 25, 3, 1, 2)
    everything, whole = render_full(t, 1000, 4.0)
    assert whole.docs_kept == 3 and whole.cut_doc is None and whole.tokens_kept == 38 and "[... cut]" not in everything
    nothing, none_kept = render_full(t, 5, 4.0)  # not even doc1's header fits after the cut mark
    assert nothing == "" and none_kept.docs_kept == 0 and none_kept.cut_doc is None


def test_chunks_stay_inside_documents_and_cut_at_sentences() -> None:
    body = "One two six. Ten red car. Big dog sat. " + " ".join(["long"] * 30)
    t = Topic(1, "T", (Document("A", body), Document("B", "Short text.")))
    chunks = chunk_topic(t, 8, 4.0)
    # sentences of 4 tokens (3 short words + '.'): two per chunk of 8; the third waits alone because the next
    # "sentence" (30 words, 30 tokens) is over-long: it is cut into chunks of 8, 8, 8 and a rest of 6
    assert [c.text for c in chunks[:2]] == ["One two six. Ten red car.", "Big dog sat."]
    assert [c.tokens for c in chunks[2:6]] == [8, 8, 8, 6]
    assert chunks[-1].doc == 2 and chunks[-1].text == "Short text."
    assert all(c.tokens <= 8 for c in chunks)


def test_full_context_prompt_fits_the_budget(tmp_path: Path) -> None:
    words = 400
    root = write_dataset(tmp_path, {"sample": ([question(1, 1), question(2, 1)],
                                               [topic(1, [doc(i, 1, words=words) for i in range(1, 6)])])})
    task = get_task("aer")
    for prompt in ("zero-shot", "cot"):
        opts = parse_options(task, {"method": "llm", "context": "full", "prompt": prompt, "max_context_tokens": 4096})
        samples = task.prepare(task.load(task.Dataset(split="sample", data=str(root)), opts).samples, opts,
                               ScoreContext())
        trim = samples[0].meta["trim"]
        assert trim["docs_kept"] < trim["docs_total"] and trim["cut_doc"] == trim["docs_kept"] + 1
        assert samples[0].meta["context"] is samples[1].meta["context"]  # one string per topic: one prefix
        for s in samples:
            assert s.meta["prompt_tokens_est"] + ANSWER_BUDGETS[prompt] <= 4096 * 0.95


def test_retrieval_embeds_each_topic_once_and_ranks_by_similarity(tmp_path: Path) -> None:
    docs = [doc(1, 1, content="The council met. Nothing else happened."),
            doc(2, 1, content="A storm flooded the harbour of town 1. The storm lasted a day."),
            doc(3, 1, content="Tourists came in summer.")]
    root = write_dataset(tmp_path, {"sample": ([question(1, 1), question(2, 1)], [topic(1, docs)])})
    from emocaustics.models.cacheplace import CacheChoice, shared_folder

    task = get_task("aer")
    emb = KeywordEmbedder(["storm", "harbour", "council", "Tourists"])
    opts = parse_options(task, {"method": "llm", "context": "retrieve", "top_k": 2})
    samples = task.load(task.Dataset(split="sample", data=str(root)), opts).samples
    ctx = ScoreContext(embedder=emb, cache=CacheChoice(shared_folder()))  # a job's default `cache: on`
    first = task.prepare(samples, opts, ctx)
    trim = first[0].meta["trim"]
    assert trim["rule"] == "retrieve" and trim["passages_kept"] == 2
    assert trim["passages"][0]["doc"] == 2  # the storm/harbour document ranks first
    assert first[0].meta["context"].startswith("[Passage 1, document 2: Report 2 on town 1]\nA storm flooded")
    # chunks: one call for the topic's chunks, one for the two queries
    assert emb.calls == [3, 2]
    again = task.prepare(samples, parse_options(task, {"method": "llm", "context": "retrieve", "top_k": 1,
                                                      "prompt": "cot"}), ctx)
    assert emb.calls == [3, 2]  # another config: the chunks and queries are kept (models/embedstore.py)
    assert again[0].meta["trim"]["passages_kept"] == 1


def test_retrieve_without_embedder_is_a_usage_error(tmp_path: Path) -> None:
    from emocaustics.core.errors import UsageError

    root = standard_dataset(tmp_path)
    task = get_task("aer")
    opts = parse_options(task, {"method": "llm", "context": "retrieve"})
    samples = task.load(task.Dataset(split="sample", data=str(root)), opts).samples
    with pytest.raises(UsageError, match="needs the job's embedder"):
        task.prepare(samples, opts, ScoreContext())


def test_run_sync_inside_a_running_loop() -> None:
    async def inner() -> int:
        return 7

    async def outer() -> int:
        return retrieve.run_sync(inner())

    assert asyncio.run(outer()) == 7


def test_embeddings_are_unit_rows_whatever_the_embedder_returns() -> None:
    """Retrieval ranks by dot product: each vector is scaled to length 1 first (a zero vector stays zero)."""
    import numpy as np

    class Raw:
        name = "raw"

        async def embed(self, texts: list[str]) -> list[list[float]]:
            return [[3.0, 4.0], [0.0, 0.0]][:len(texts)]

    got = asyncio.run(embed_kept(Raw(), None, ["a", "b"]))
    assert got.dtype == np.float32
    assert np.allclose(got, [[0.6, 0.8], [0.0, 0.0]])


def test_an_over_long_sentence_closes_the_chunk_before_it_and_its_rest_starts_the_next() -> None:
    """One rule closes a chunk, whether the sentence that does not fit is over-long or not: the chunk so far is done,
    an over-long sentence is cut into chunks of its own, and its rest is the start of the next chunk."""
    body = "One two six. " + " ".join(["long"] * 20) + ". Ok go."
    chunks = chunk_topic(Topic(1, "T", (Document("A", body),)), 8, 4.0)
    assert chunks[0].text == "One two six."  # 4 tokens; the next sentence (20 words and '.': 21) does not fit
    assert [c.tokens for c in chunks] == [4, 8, 8, 8]  # the 21 cut 8, 8; its rest (5) and "Ok go." (3) together
    assert chunks[-1].text == "long long long long. Ok go."
    assert [c.tokens for c in chunk_topic(Topic(1, "T", (Document("A", "a b. c d e f g h i j k l."),)), 4, 1.0)] \
        == [3, 4, 4, 3]  # "a b." (3), then the 11 of the second cut 4, 4 and a rest of 3
