"""The LLM judge of EmoCaustics scoring in the eval log and the exports (issue 56, item 8): each judge call (prompt,
answer, tokens) is logged with the dialogue whose scoring read its answer, beside that sample's solve calls, and the
inspect export carries it as a `model` event (role `grader`) that inspect_ai's own reader reads back; Every Eval Ever
carries it in the instance's metadata. A stand-in judge LLM in process, stand-in embeddings over HTTP; no engine, no
Ray."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
import yaml

from emocaustics.core.records import Sample
from emocaustics.evallog import sink
from emocaustics.evallog.read import RunLog
from emocaustics.evallog.writer import EvalLog
from emocaustics.models.base import ChatRequest, Completion
from emocaustics.tasks.longdialogue.data.schema import Dialogue, Emotion, Event, Utterance
from emocaustics.tasks.longdialogue.score.engine import ascore
from emocaustics.tasks.longdialogue.score.judge import Judge
from tests.fakes.openai_chat import FakeOpenAIServer
from tests.fakes.openai_embeddings import FakeEmbeddingsServer

FELT = (Emotion("negative", "被指责", ("2",), "2"),)
D1 = Dialogue(id=1, utterances=(Utterance(0, "这口服液不能喝", "1", None), Utterance(1, "你这是虚伪", "2", None)),
              chat_files=("chat_1.json",), chains={"1": (Event("口服液争执", FELT),), "2": (Event("教育分歧", FELT),)})
D2 = Dialogue(id=2, utterances=(Utterance(0, "不行", "2", None),), chat_files=("chat_2.json",),
              chains={"2": (Event("反对提议", FELT),)})
PREDS = {1: {"1": (Event("口服液的争执", FELT),), "2": (Event("另一回事", FELT),)},
         2: {"2": (Event("反对那个提议", FELT),)}}


def score_chains(dialogues, preds, **kw):
    return asyncio.run(ascore("emotion", dialogues, preds, **kw))


class CountingJudge:
    """A stand-in judge LLM: {"same": 1} when both events start alike, with made-up token counts per call."""

    name = "stand-in-judge"

    async def generate(self, requests: list[ChatRequest]) -> list[Completion]:
        out = []
        for r in requests:
            user = r.messages[-1]["content"]
            a, b = (user.split(tag)[1].split("\n")[0] for tag in ("事件A：", "事件B："))
            out.append(Completion(text=json.dumps({"same": int(a[0] == b[0])}), prompt_tokens=len(user),
                                  generated_tokens=5))
        return out


@pytest.fixture(scope="module")
def embedder():
    with FakeEmbeddingsServer() as srv:
        yield f"openai:fake-embed@{srv.base_url}"


@pytest.fixture
def every_pair_judged(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every event pair similar enough that the judge decides (the similarity gate is tested elsewhere)."""
    import emocaustics.tasks.longdialogue.score.chains as ch
    import emocaustics.tasks.longdialogue.score.policy as pol

    monkeypatch.setattr(pol.Policy, "chain_rules", ch.ChainRules(event_threshold=-1.0))


def test_judge_calls_are_logged_with_the_dialogue_they_judged(tmp_path: Path, embedder, every_pair_judged) -> None:
    preds = PREDS
    log = EvalLog(tmp_path)  # its writer process, as in a job
    with sink.active(log.config("emotion_x")):
        res = score_chains([D1, D2], preds, embedder=embedder, judge=Judge(CountingJudge()))
    samples = [Sample(str(d.id), d) for d in (D1, D2)]
    log.config("emotion_x").finish(samples, {s.id: preds[int(s.id)] for s in samples})
    assert res.summary["judge_stats"]["asked"] == 3  # D1's two holders' events, D2's one: one batch
    run = RunLog(tmp_path)
    one, two = run.sample("emotion_x", "1"), run.sample("emotion_x", "2")
    assert one["calls"] == [] and one["attempts"] == 0  # no solve calls (a calibration): the judge's are apart
    assert one["judge"]["model"] == "stand-in-judge" and len(one["judge"]["calls"]) == 2
    asked = {c["messages"][-1]["content"].split("事件B：")[1].split("\n")[0]: c for c in one["judge"]["calls"]}
    assert set(asked) == {"口服液的争执", "另一回事"}  # D1's questions only
    call = asked["口服液的争执"]
    assert "口服液争执" in call["messages"][-1]["content"] and call["messages"][0]["role"] == "system"
    assert json.loads(call["text"]) == {"same": 1} and call["step"] == "judge" and call["retry"] == 0
    assert call["prompt_tokens"] == len(call["messages"][-1]["content"]) and call["generated_tokens"] == 5
    assert [c["messages"][-1]["content"].split("事件B：")[1].split("\n")[0]
            for c in two["judge"]["calls"]] == ["反对那个提议"]
    assert json.loads(two["judge"]["calls"][0]["text"]) == {"same": 1}


def test_no_log_no_calls_kept(embedder, every_pair_judged) -> None:
    judge = Judge(CountingJudge())  # outside a job: nothing current, nothing kept
    score_chains([D1], PREDS, embedder=embedder, judge=judge)
    assert judge.log is None and judge._calls == {} and judge._read == {}


def test_job_judge_calls_in_the_eval_log_and_both_exports(tmp_path: Path, embedder, every_pair_judged,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from inspect_ai.event import ModelEvent
    from inspect_ai.log import read_eval_log

    from emocaustics.exports import export_run
    from emocaustics.jobs.runner import run_job
    from emocaustics.jobs.spec import load_job

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
    monkeypatch.setenv("EMOCAUSTICS_CACHE", str(tmp_path / "cache"))
    with FakeOpenAIServer() as judge:  # answers {"same": 0}, the schema's first value
        job = {"name": "judged", "dataset": {"subset": "sample", "ids": [1, 2]},
               "runs": [{"task": "emotion", "method": "baseline"}],
               "scoring": {"judge": f"openai:fake-judge@{judge.base_url}", "embedder": embedder}}
        (tmp_path / "job.yaml").write_text(yaml.safe_dump(job), encoding="utf-8")
        run = Path(run_job(load_job(tmp_path / "job.yaml", overrides={"output": str(tmp_path / "runs")}),
                           out=str(tmp_path / "run")))
        asked = len(judge.bodies)
    log = RunLog(run)
    (label,) = log.labels()
    judged = {sid: log.sample(label, sid)["judge"] for sid in ("1", "2")}
    logged = [c for j in judged.values() if j for c in j["calls"]]
    assert asked > 0 and len(logged) >= asked  # every call asked is some dialogue's (a shared one: in both)
    assert all(c["step"] == "judge" and c["messages"] and c["text"] and c["prompt_tokens"] for c in logged)
    assert not (run / "evallog" / "staging").exists() or not list((run / "evallog" / "staging").iterdir())

    (path,) = export_run(run, "inspect", tmp_path / "inspect")
    got = read_eval_log(str(path))  # inspect_ai's own reader
    for s in got.samples or []:
        events = [e for e in s.events if isinstance(e, ModelEvent) and e.role == "grader"]
        calls = (judged[str(s.id)] or {}).get("calls", [])
        assert [e.input[-1].text for e in events] == [c["messages"][-1]["content"] for c in calls]
        assert [e.output.completion for e in events] == [c["text"] for c in calls]
        assert all(e.model.endswith("fake-judge") for e in events)
        assert [e.output.usage.input_tokens for e in events] == [c["prompt_tokens"] for c in calls]
    assert sum(len(s.events) for s in got.samples or []) == len(logged)

    instances = [json.loads(line) for p in export_run(run, "eee", tmp_path / "eee") if p.suffix == ".jsonl"
                 for line in p.read_text(encoding="utf-8").splitlines()]
    for inst in instances:
        calls = (judged[inst["sample_id"]] or {}).get("calls", [])
        kept = json.loads(inst["metadata"].get("judge.calls", "[]"))
        assert [k["text"] for k in kept] == [c["text"] for c in calls]


def test_reference_mode_logs_each_dialogue_s_judge_calls_and_the_answer_that_failed_one(tmp_path: Path) -> None:
    from emocaustics.tasks.longdialogue.score.reference import RawPrediction
    from tests.tasks.longdialogue.test_score_reference_compat import (CH_EMBEDDER, SX_DIALOGUE, SX_EMBEDDER, SX_JUDGE,
                                                                      SX_PRED, TableJudge)

    crashed = Dialogue(id=10, utterances=(Utterance(0, "x", "1"),), chat_files=("chat_10.json",),
                       chains={"1": (Event("吵架", ()),)})
    pred = RawPrediction({"1": {"events": [{"event": "P0", "emotions": []}]}}, "output_emotions_10.json")
    log = EvalLog(tmp_path)
    sx, ch = TableJudge(SX_JUDGE), TableJudge({("吵架", "P0"): "是的"})
    with sink.active(log.config("sx")):
        asyncio.run(ascore("sextuple", [SX_DIALOGUE], {1: SX_PRED}, embedder=SX_EMBEDDER, judge=sx, compat="reference"))
    with sink.active(log.config("ch")):
        res = asyncio.run(ascore("emotion", [crashed], {10: pred}, embedder=CH_EMBEDDER, judge=ch, compat="reference"))
    for label, d in (("sx", SX_DIALOGUE), ("ch", crashed)):
        log.config(label).finish([Sample(str(d.id), d)], {})
    run = RunLog(tmp_path)
    calls = run.sample("sx", "1")["judge"]["calls"]
    assert [c["messages"][1]["content"] for c in calls] == [r.messages[1]["content"] for r in sx.requests]
    assert {c["text"] for c in calls} <= {*SX_JUDGE.values(), "0"} and len(calls) == len(sx.requests) > 1
    assert "is not an integer" in res.summary["failures"][0]["reason"]  # the dialogue failed on this answer:
    assert [c["text"] for c in run.sample("ch", "10")["judge"]["calls"]] == ["是的"]  # its call is in its log


def _in_process_map(items, stages, *, batch_size, **_):
    """`scoring.fanout.ray_map` without Ray: each stage made as an actor would be (its kwargs pickled through, as Ray
    ships them) and run over the items in batches, rows back as the stream gives them."""
    import pickle

    made = [st.fn(**pickle.loads(pickle.dumps(st.kwargs))) for st in stages]
    out = []
    for k in range(0, len(items), batch_size):
        batch = {key: [it[key] for it in items[k:k + batch_size]] for key in items[0]}
        for fn in made:
            batch = fn(batch)
        out += [dict(zip(batch, row)) for row in zip(*batch.values())]
    return out


@pytest.mark.parametrize("prompts", [True, False])
def test_ray_branch_brings_the_actor_s_judge_calls_back_to_the_driver_s_log(tmp_path: Path, embedder, prompts,
                                                                           every_pair_judged, monkeypatch) -> None:
    """`score_with_ray`'s Ray branch with its stages run in process: the judge in the score stage sees no log (as in
    an actor), keeps each dialogue's calls, and the driver emits them to the config's log, one line per dialogue as
    the in-process scoring writes it."""
    import emocaustics.scoring.fanout as fanout
    from emocaustics.tasks.longdialogue.score.plan import score_with_ray

    monkeypatch.setattr(fanout, "ray_map", _in_process_map)
    lines = {}
    for path in ("ray", "in-process"):
        log = EvalLog(tmp_path / path, prompts=prompts)
        with sink.active(log.config("emotion_x")):
            res = score_with_ray("emotion", [D1, D2], PREDS, embedder=embedder, judge=CountingJudge(),
                                 batch_size=1, ray=path == "ray")
        assert res.summary["path"] == path
        samples = [Sample(str(d.id), d) for d in (D1, D2)]
        log.config("emotion_x").finish(samples, {s.id: PREDS[int(s.id)] for s in samples})
        run = RunLog(tmp_path / path)
        lines[path] = {sid: run.sample("emotion_x", sid)["judge"] for sid in ("1", "2")}
    for sid in ("1", "2"):
        ray, local = lines["ray"][sid], lines["in-process"][sid]
        assert ray["model"] == local["model"] == "stand-in-judge"
        fields = ("messages", "text", "step", "retry", "prompt_tokens", "generated_tokens", "parsed")
        assert [{k: c[k] for k in fields} for c in ray["calls"]] == [{k: c[k] for k in fields} for c in local["calls"]]
    assert len(lines["ray"]["1"]["calls"]) == 2 and len(lines["ray"]["2"]["calls"]) == 1
    assert (lines["ray"]["1"]["calls"][0]["text"] is not None) == prompts


def test_ray_branch_outside_a_job_keeps_nothing(embedder, every_pair_judged, monkeypatch) -> None:
    import emocaustics.scoring.fanout as fanout
    from emocaustics.tasks.longdialogue.score.plan import ScoreStage, score_with_ray

    monkeypatch.setattr(fanout, "ray_map", _in_process_map)
    res = score_with_ray("emotion", [D1, D2], PREDS, embedder=embedder, judge=CountingJudge(), batch_size=2)
    assert res.summary["path"] == "ray" and res.dialogues.height == 2
    stage = ScoreStage("emotion", CountingJudge(), "spec", "zero", {}, {})
    assert stage.kept is None and stage.judge.log is None
