"""The core's reusable scorers (scoring/scorers.py) on worked examples: exact match, set match, token F1 and the LLM
judge (against a scripted stand-in for the judge model; no engine, no Ray), each a long score row per sample and
metric, with failures and samples without a target kept as rows."""

from __future__ import annotations

import pytest

from emocaustics.core.errors import UsageError
from emocaustics.core.task import Failure, Sample
from emocaustics.models.base import Completion
from emocaustics.scoring.scorers import ExactMatch, LLMJudge, SetMatch, TokenF1

SAMPLES = [Sample("a", {"question": "Capital of France?"}, "Paris"), Sample("b", {"question": "2+2?"}, "four"),
           Sample("c", {"question": "?"}, None), Sample("d", {"question": "?"}, "x")]


def rows(scored, metric):
    return {r["sample_id"]: (r["value"], r["status"], r["reason"])
            for r in scored.rows.filter(scored.rows["metric"] == metric).iter_rows(named=True)}


def test_exact_match_normalises_and_keeps_failures_and_unscored_as_rows() -> None:
    preds = {"a": {"answer": "  paris "}, "b": {"answer": "4"}, "c": {"answer": "x"}, "d": Failure("solve", "boom")}
    got = ExactMatch(field="answer").score(SAMPLES, preds)
    assert rows(got, "exact_match") == {"a": (1.0, "ok", None), "b": (0.0, "ok", None),
                                        "c": (None, "unscored", "no target for this sample"),
                                        "d": (0.0, "failed", "failed: solve: boom")}
    assert got.summary == {"exact_match": pytest.approx(1 / 3)}  # a, b, d count; c is out of the mean
    assert ExactMatch(field="answer", normalize=False).score(SAMPLES[:1], {"a": {"answer": "paris"}}).summary == \
        {"exact_match": 0.0}
    missing = ExactMatch(field="answer").score(SAMPLES[:2], {"a": {"city": "Paris"}})
    assert rows(missing, "exact_match") == {"a": (0.0, "failed", "the prediction has no field 'answer' (its "
                                                  "fields: city)"), "b": (0.0, "failed", "no prediction")}
    assert ExactMatch().score([Sample("e", "x", "Ｐａｒｉｓ")], {"e": "PARIS"}).summary == {"exact_match": 1.0}  # NFKC


def test_set_match_jaccard_and_exact_set() -> None:
    samples = [Sample("1", None, ["A", "C"]), Sample("2", None, "a, b"), Sample("3", None, []), Sample("4", None, "A")]
    got = SetMatch().score(samples, {"1": ["C", "A"], "2": ["A", "C"], "3": [], "4": "b"})
    assert {k: v[0] for k, v in rows(got, "jaccard").items()} == {"1": 1.0, "2": pytest.approx(1 / 3), "3": 1.0,
                                                                  "4": 0.0}
    assert {k: v[0] for k, v in rows(got, "exact_set").items()} == {"1": 1.0, "2": 0.0, "3": 1.0, "4": 0.0}
    assert got.summary["jaccard"] == pytest.approx((1 + 1 / 3 + 1 + 0) / 4)


def test_token_f1_with_squad_normalisation() -> None:
    samples = [Sample("1", None, "The Eiffel Tower"), Sample("2", None, "a cat sat"), Sample("3", None, "the"),
               Sample("4", None, "blue")]
    got = TokenF1().score(samples, {"1": "eiffel tower!", "2": "the cat sat down", "3": "an", "4": "red"})
    f1 = {k: v[0] for k, v in rows(got, "f1").items()}
    # 2: tokens [cat, sat, down] vs [cat, sat]: p 2/3, r 1, F1 0.8; 3: both empty after articles go: 1
    assert f1 == {"1": 1.0, "2": pytest.approx(0.8), "3": 1.0, "4": 0.0}


class JudgeStandIn:
    """Stands in for a judge model: says correct when the graded answer text holds the reference."""

    name = "judge-stand-in"

    def __init__(self, bad_first: bool = False) -> None:
        self.requests, self.bad_first = [], bad_first

    async def generate(self, requests):
        out = []
        for r in requests:
            self.requests.append(r)
            text = r.messages[-1]["content"]
            ref = text.split("Reference answer: ")[1].split("\n")[0]
            graded = text.split("Answer to grade: ")[1].split("\n")[0]
            if self.bad_first and r.sampling.seed == 0:
                out.append(Completion(text="{oops"))
            else:
                out.append(Completion(text='{"correct": %s, "reason": "compared"}' % str(ref in graded).lower()))
        return out


def test_llm_judge_asks_a_schema_constrained_verdict_per_sample() -> None:
    judge = JudgeStandIn(bad_first=True)
    preds = {"a": {"answer": "It is Paris"}, "b": {"answer": "4"}, "c": {"answer": "x"}, "d": Failure("solve", "x")}
    got = LLMJudge(field="answer", model=judge).score(SAMPLES, preds)
    assert {k: v[:2] for k, v in rows(got, "judge").items()} == {"a": (1.0, "ok"), "b": (0.0, "ok"),
                                                                 "c": (None, "unscored"), "d": (0.0, "failed")}
    assert len(judge.requests) == 4  # a and b asked, each re-asked once on a new seed after an unparseable verdict
    first = judge.requests[0]
    assert "Question: Capital of France?\nReference answer: Paris\nAnswer to grade: It is Paris" in \
        first.messages[-1]["content"]
    assert set(first.schema["properties"]) == {"correct", "reason"}
    assert got.items.sort("sample_id").to_dicts() == [{"sample_id": "a", "correct": True, "reason": "compared"},
                                                      {"sample_id": "b", "correct": False, "reason": "compared"}]


class ClosableJudge(JudgeStandIn):
    def __init__(self) -> None:
        super().__init__()
        self.closed = 0

    async def aclose(self) -> None:
        self.closed += 1


def test_a_judge_made_from_a_spec_is_closed_and_a_judge_handed_in_is_not(monkeypatch) -> None:
    from emocaustics.models import factory
    from emocaustics.models.spec import parse_llm_spec

    made = ClosableJudge()
    monkeypatch.setattr(factory, "make_llm", lambda spec, **kw: made)
    preds = {"a": {"answer": "It is Paris"}, "b": {"answer": "4"}}
    LLMJudge(field="answer", model=parse_llm_spec("openai:judge@http://127.0.0.1:9/v1")).score(SAMPLES[:2], preds)
    assert made.closed == 1  # its HTTP session is closed in the loop that opened it
    given = ClosableJudge()
    LLMJudge(field="answer", model=given).score(SAMPLES[:2], preds)
    assert given.closed == 0 and len(given.requests) == 2  # the caller's model stays open for the caller


def test_llm_judge_without_a_judge_model_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="needs a judge model: set scoring.judge"):
        LLMJudge().score(SAMPLES[:1], {"a": "Paris"})
