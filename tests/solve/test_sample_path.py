"""One sample's way through the plan, each thing done once (issue 54 item 6): the sample is not rebuilt from JSON on
its way, it is placed once on what travels (and sized once for the order), its row comes back typed, its cost is
counted by one layer (the calls by `CountingLLM`, re-asks and unparseable answers by the asker), and a task's
prediction holds only what the task predicts (ECPE's counts are in the stats row)."""

from __future__ import annotations

import json
import pickle
from collections import Counter
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from emocaustics.core import aio
from emocaustics.core.task import Failure, Options, Placement, Sample, Task
from emocaustics.models.base import Completion, ModelBase
from emocaustics.solve.ask import Ask, Asker
from emocaustics.solve.item import Row
from emocaustics.solve.plan import asolve_samples
from emocaustics.solve.schema import schema_of


class Word(BaseModel):
    word: str = Field(max_length=20)


class Remote(ModelBase):
    """A model whose `run` works as the pool's: it reads each item's affinity, weight and chain, and the item crosses
    to the replica pickled (the one serialisation); its first answer per sample does not parse."""

    name = cache_id = "remote-double"
    runs_remotely = True

    def __init__(self) -> None:
        self.keys: list[tuple[str, int, int]] = []
        self.asked: Counter[str] = Counter()

    async def generate(self, requests: list[Any]) -> list[Completion]:
        out = []
        for r in requests:
            self.asked[r.affinity] += 1
            text = "not json" if self.asked[r.affinity] == 1 else json.dumps({"word": r.affinity})
            out.append(Completion(text=text, prompt_tokens=3, generated_tokens=2))
        return out

    async def run(self, fn: Any, items: list[Any], affinity_key: Any = None, *, weight_key: Any = None,
                  chain_key: Any = None, cache_path: Any = None) -> list[Any]:
        self.keys += [(affinity_key(it), weight_key(it), chain_key(it)) for it in items]
        return [await fn(self, pickle.loads(pickle.dumps(it))) for it in items]


class Counted(Task):
    name = "counted-placement"
    answer_models = (Word,)

    def __init__(self) -> None:
        self.placed: Counter[str] = Counter()

    def placement(self, sample: Sample, options: Options) -> Placement:
        self.placed[sample.id] += 1
        return Placement(affinity=f"aff-{sample.id}", weight=float(len(sample.input)), chain=7, size=len(sample.input))

    async def solve(self, llm: Any, sample: Sample, options: Options) -> Any:
        asker = Asker(llm, affinity=sample.id)
        return (await asker.ask(Ask("word", sample.input, Word, schema_of(Word)))).word


def _run(tmp_path: Path, monkeypatch: Any) -> tuple[Counted, Remote, list[dict[str, Any]], dict[str, Any]]:
    task, llm, kept = Counted(), Remote(), {}
    samples = [Sample("a", "hi"), Sample("b", "longest"), Sample("c", "mid")]
    rows = aio.run(asolve_samples(task, samples, Options(method="ask"), llm, tmp_path,
                                  keep=lambda sid, value, stats: kept.update({sid: (value, stats)})))
    return task, llm, rows, kept


def test_a_sample_is_placed_once_and_never_rebuilt_from_json(tmp_path, monkeypatch):
    task, llm, rows, _ = _run(tmp_path, monkeypatch)
    assert [r["ok"] for r in rows] == [True] * 3
    # once for the order (its size), once on its solver view for the pool (here the view is the sample itself);
    # before: five times (size, the bound's weight, then affinity, weight and chain each from a rebuilt sample)
    assert task.placed == {"a": 2, "b": 2, "c": 2}
    assert llm.keys == [("aff-b", 7, 7), ("aff-c", 3, 7), ("aff-a", 2, 7)]  # largest first, the placement carried
    assert not hasattr(Sample, "from_json")  # before: to_json once and from_json four times per sample


def test_the_cost_is_counted_once_and_the_row_in_memory_is_the_row_on_disk(tmp_path, monkeypatch):
    _, llm, rows, kept = _run(tmp_path, monkeypatch)
    on_disk = {r.pop("id"): r for r in map(json.loads, (tmp_path / "stats.jsonl").read_text().splitlines())}
    for sid in "abc":
        stats = on_disk[sid]
        # two calls (the first answer did not parse), counted by the layer in front of the model; the re-ask and the
        # unparseable answer by the asker, into the same row (before: not in the row of a task without side inputs)
        assert (stats["llm_calls"], stats["prompt_tokens"], stats["unparseable"], stats["retries"]) == (2, 6, 1, 1)
        assert kept[sid] == (sid, stats)
    assert sum(llm.asked.values()) == sum(s["llm_calls"] for s in on_disk.values())
    lines = (tmp_path / "predictions.jsonl").read_text().splitlines()
    assert sorted(lines) == sorted(json.dumps({"id": s, "prediction": s}) for s in "abc")  # the files as before


def test_the_asker_counts_only_what_the_model_layer_cannot_see():
    asker = Asker(Remote())
    assert asker.stats.to_json() == {"unparseable": 0, "retries": 0}  # outside a sample: its own counts


def test_a_row_is_typed_and_its_json_is_what_the_plan_returns():
    row = Row("s", prediction={"x": 1}, stats={"llm_calls": 1})
    assert row.ok and row.to_json() == {"id": "s", "ok": True, "stats": {"llm_calls": 1}}
    failed = Row("t", failure=Failure("window 2", "no answer"))
    assert not failed.ok and failed.to_json() == {"id": "t", "ok": False, "step": "window 2", "reason": "no answer",
                                                  "stats": {}}


def test_an_old_ecpe_prediction_with_its_counts_scores_and_submits_as_one_without(tmp_path):
    from emocaustics.core.task import ScoreContext, parse_options
    from emocaustics.tasks.ecpe.task import EcpeTask

    task = EcpeTask()
    opts = parse_options(task, {"method": "direct"})
    utts = [{"utterance_ID": i, "speaker": "A", "text": t, "emotion": e}
            for i, (t, e) in enumerate([("I lost my job", "neutral"), ("Oh no", "sadness")], 1)]
    s = Sample("7", {"conversation_ID": 7, "utterances": utts},
               {"emotions": ["neutral", "sadness"], "subtask1": [["2_sadness", "1_0_4"]], "subtask2": [["2_sadness", "1"]]})
    new = {"subtask1": [["2_sadness", "1_0_4"]], "subtask2": [["2_sadness", "1"]], "spans": ["I lost my job"],
           "span_misses": 0, "duplicates": 0, "dropped": [], "no_cause": 0}
    old = {**new, "unparseable": 2, "retries": 2}  # a prediction file written before the counts moved to stats
    scored = [task.score([s], {"7": p}, opts, ScoreContext()) for p in (new, old)]
    assert scored[0].rows.equals(scored[1].rows) and scored[0].summary == scored[1].summary
    assert "unparseable" not in scored[1].rows["metric"].to_list()
    files = []
    for name, p in (("new", new), ("old", old)):
        task.finalize(tmp_path / name, [s], {"7": p}, opts)
        files.append({f.name: f.read_bytes() for f in sorted((tmp_path / name).iterdir()) if f.suffix != ".zip"})
    assert files[0] == files[1] and "Subtask_1_pred.json" in files[0]
