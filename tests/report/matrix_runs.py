"""The run folders the headline matrix (test_headline_matrix_runs.py) reads, each made once per module by the real
job runner (`jobs.runner.run_job`) with no Ray and no engine:

- `builtin`: every built-in task by a method that needs no model (aer, ecpe, emotion, sextuple, narrative, human,
  dialogue-judge) on slices of the shared public data (skipped where it is not beside the checkout);
- `first`: a stand-in task through a real `openai:` client against the in-repo fake endpoint (tests/fakes), whose
  answers depend on the sample and the request's seed (so epochs differ), with failed and unscored samples: one
  epoch, epochs with each reducer, a YAML task, a sample over its token limit, and batch mode (the Batch API
  stand-in);
- `cached`: the same job again into a new folder on the same response cache: every call a hit, the endpoint idle;
- `resumed`: a copy of `first` as a kill leaves it (an epoch's folder and half a config's predictions gone), resumed.

Each comes with the console's lines the run printed (the `[score LABEL] ...` lines)."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from emocaustics.core.task import (DatasetOptions, Failure, Loaded, Methods, Options, Sample, ScoreContext, Scored,
                                   Task, register, rows_frame, unregister)
from emocaustics.models.base import ChatRequest, Sampling

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "datasets"
# the public data the built-in tasks read (beside the checkout): without it their configs are left out
PROBES = {"aer": "sample_data/questions.jsonl", "ecac": "Subtask_1_test.json",
          "humaneval": "hits_data_FreeTopicRound1.json"}
DATA_HERE = all((SHARED / name / probe).is_file() for name, probe in PROBES.items())
IDS = [f"s{i}" for i in range(8)]
LONG = "s5"  # answered with more tokens than the limit config allows
UNSCORED = "s7"  # scored, but no value applies
REDUCERS = ("mean", "max", "mode", "pass@2")
EPOCHS = 3
BUILTIN = ("aer", "ecpe", "sextuple", "emotion", "narrative", "human", "dialogue-judge")
TOKEN_LIMIT = 12
FAST_BATCH = "batch=true&batch_poll=0.02&batch_quiet=0.05"
YAML_TASK = """name: capitals-matrix
dataset: {path: capitals.jsonl}
fields: {id: qid, target: answer}
solver: {name: generate, prompt: "Capital of {country}? Answer as JSON."}
scorer: {name: exact_match}
"""
CAPITALS = {"France": "Paris", "Japan": "Tokyo", "Peru": "Lima", "Chad": "N'Djamena"}
RIGHT_CAPITALS = {"France", "Peru"}  # the endpoint knows these; it says "Paris" for the others


def verdict(sid: str, seed: Any) -> str:
    """The endpoint's answer to a sample's request: `right`, `wrong` or `boom` (the task fails the sample), fixed by
    the sample and the request's seed (each epoch sends its own), so a rerun answers alike."""
    if sid == LONG:
        return "right " + "x" * 40  # over TOKEN_LIMIT generated tokens; right where no limit applies
    h = int(hashlib.sha256(f"{sid}/{seed}".encode()).hexdigest(), 16) % 5
    return "boom" if h == 0 else "right" if h >= 3 else "wrong"


class MatrixTask(Task):
    """Asks the endpoint once per sample; `boom` is a failure, `right` scores 1, anything else 0; s7 is unscored."""

    name = "matrix-test"
    primary_metric = "accuracy"
    methods = Methods(solver=("ask",))
    Dataset = DatasetOptions

    def load(self, dataset: DatasetOptions, options: Options) -> Loaded:
        return Loaded([Sample(sid, {"q": sid}, target="right") for sid in IDS])

    async def solve(self, llm: Any, sample: Sample, options: Options) -> Any:
        got = (await llm.generate([ChatRequest(messages=({"role": "user", "content": sample.id},),
                                               sampling=Sampling(max_tokens=64))]))[0]
        if got.error or got.text == "boom":
            raise ValueError(f"{sample.id}: the endpoint said {got.error or got.text!r}")
        return got.text.split()[0]

    def score(self, samples: list[Sample], predictions: dict[str, Any], options: Options,
              ctx: ScoreContext) -> Scored:
        rows = []
        for s in samples:
            p = predictions.get(s.id)
            if isinstance(p, Failure) or p is None:
                rows.append({"sample_id": s.id, "metric": "accuracy", "value": None, "status": "failed",
                             "reason": str(p)})
            elif s.id == UNSCORED:
                rows.append({"sample_id": s.id, "metric": "accuracy", "value": None, "status": "unscored"})
            else:
                rows.append({"sample_id": s.id, "metric": "accuracy", "value": float(p == s.target)})
        values = [r["value"] or 0.0 for r in rows]
        return Scored(rows_frame(rows), {"accuracy": sum(values) / len(values)})


class TextEmbedder:
    """Stands in for the job's embedder (no model loaded): a unit vector drawn from each text's hash, so equal texts
    are similar (cosine 1) and others far apart."""

    name = "text-hash"

    async def embed(self, texts: list[str]) -> Any:
        import numpy as np

        rows = [np.random.default_rng(int(hashlib.sha256(t.encode()).hexdigest()[:8], 16)).normal(size=16)
                for t in texts]
        vectors = np.array(rows, dtype=np.float32).reshape(len(texts), 16)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True).clip(1e-9)


@dataclass
class MadeRun:
    name: str
    dir: Path
    console: str  # what the run printed
    calls: int = 0  # live requests the endpoint answered during this run
    batched: int = 0  # requests it answered in batches (the Batch API stand-in)


def _endpoint():
    from fakes.openai_batch import FakeOpenAIBatchServer

    class Endpoint(FakeOpenAIBatchServer):
        def answer_text(self, body: dict[str, Any]) -> str:
            last = next(m["content"] for m in reversed(body["messages"]) if m["role"] == "user")
            if last.startswith("Capital of"):
                country = last.split()[2].rstrip("?")
                return json.dumps({"answer": CAPITALS[country] if country in RIGHT_CAPITALS else "Paris"})
            if last in IDS:
                return verdict(last, body.get("seed"))
            return super().answer_text(body)  # a built-in task's prompt: a schema's instance echoing it

    return Endpoint()


def _run(job: Any, out: Path, **kw: Any) -> tuple[Path, str]:
    from emocaustics.jobs.runner import run_job

    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        folder = run_job(job, out=str(out), check=False, **kw)
    return folder, printed.getvalue()


EXTRA_SOLVERS = {"ecpe": {"options": {"method": "direct"}, "dataset": {"ids": [1401]}},
                 "emotion": {"options": {"method": "direct"}, "dataset": {"ids": [1]}},
                 "sextuple": {"options": {"method": "direct"}, "dataset": {"ids": [1]}},
                 "narrative": {"options": {"method": "llm"}, "select": {"limit": 1}}}


def axes_job(tmp: Path, url: str) -> Any:
    from emocaustics.jobs.spec import JobSpec

    base = {"task": MatrixTask.name, "model": "live", "options": {"method": "ask"}}
    runs = [{**base, "name": "one"},
            *({**base, "name": f"epochs-{r.replace('@', '')}", "epochs": EPOCHS, "reducer": r} for r in REDUCERS),
            {**base, "name": "limit", "token_limit": TOKEN_LIMIT},
            {**base, "name": "batch", "model": "batched"},
            {"task": str(tmp / "tasks" / "capitals.yaml"), "model": "live", "options": {"method": "generate"},
             "name": "yaml"}]
    if DATA_HERE:  # the built-in tasks' solvers on the model axes too
        ask = {"task": "aer", "model": "live", "dataset": {"split": "sample", "ids": ["q-1", "q-2", "q-3"]},
               "options": {"method": "llm", "prompt": "zero-shot", "context": "none"}}
        runs += [{**ask, "name": "aer-one"}, {**ask, "name": "aer-epochs-max", "epochs": EPOCHS, "reducer": "max"},
                 {**ask, "name": "aer-limit", "token_limit": TOKEN_LIMIT},
                 {**ask, "name": "aer-batch", "model": "batched"}]
        for task, extra in EXTRA_SOLVERS.items():  # the other built-in tasks' solvers, once and in epochs
            one = {"task": task, "model": "live", **extra}
            runs += [{**one, "name": f"{task}-llm"},
                     {**one, "name": f"{task}-llm-epochs", "epochs": 2, "reducer": "max"}]
        judge = {"task": "dialogue-judge", "model": "live", "dataset": {"data": str(_dialogue_round(tmp / "round"))},
                 "options": {"method": "llm", "resamples": 0}}
        runs += [{**judge, "name": "dialogue-judge-llm"},
                 {**judge, "name": "dialogue-judge-llm-epochs", "epochs": 2, "reducer": "mean"}]
    return JobSpec.model_validate({
        "name": "matrix", "output": str(tmp / "runs"), "cache_dir": str(tmp / "cache"),
        "models": {"live": {"spec": f"openai:fake@{url}", "concurrency": 4},
                   "batched": {"spec": f"openai:fake-batch@{url}?{FAST_BATCH}"}},
        "runs": runs})


@pytest.fixture(scope="module")
def axes_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, MadeRun]:
    """`first`, `cached` and `resumed` (see the module's docstring)."""
    import emocaustics.models.embedders as embedders

    tmp = tmp_path_factory.mktemp("axes")
    (tmp / "tasks").mkdir()
    (tmp / "tasks" / "capitals.yaml").write_text(YAML_TASK, encoding="utf-8")
    (tmp / "tasks" / "capitals.jsonl").write_text("".join(
        json.dumps({"qid": c.lower()[:2], "country": c, "answer": a}) + "\n" for c, a in CAPITALS.items()),
        encoding="utf-8")
    mp = pytest.MonkeyPatch()
    mp.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
    mp.setenv("EMOCAUSTICS_AER_DATA", str(SHARED / "aer"))
    mp.setenv("EMOCAUSTICS_ECAC_DATA", str(SHARED / "ecac"))
    mp.setenv("EMOCAUSTICS_HUMANEVAL_DATA", str(SHARED / "humaneval"))
    mp.setattr(embedders, "make_embedder", lambda *a, **k: TextEmbedder())
    task = register(MatrixTask())
    made: dict[str, MadeRun] = {}
    try:
        with _endpoint() as srv:
            job = axes_job(tmp, srv.base_url)
            for name in ("first", "cached", "resumed"):
                if name == "resumed":
                    shutil.copytree(made["first"].dir, tmp / name)
                    _as_a_kill_leaves_it(tmp / name)
                before = len(srv.bodies), len(srv.lines)
                folder, printed = _run(job, tmp / name, resume=name == "resumed")
                made[name] = MadeRun(name, folder, printed, len(srv.bodies) - before[0], len(srv.lines) - before[1])
    finally:
        unregister(task.name)
        mp.undo()
    return made


def _as_a_kill_leaves_it(run: Path) -> None:
    """An epochs config's last epoch gone, half of the one-epoch config's predictions gone, no tables yet."""
    preds = run / "predictions"
    epoch_dirs = sorted(preds.glob(f"epochs-max*/epoch-{EPOCHS}"))
    assert epoch_dirs, sorted(p.name for p in preds.iterdir())
    shutil.rmtree(epoch_dirs[0])
    one = next(preds.glob("one*/predictions.jsonl"))
    lines = one.read_text(encoding="utf-8").splitlines(keepends=True)
    one.write_text("".join(lines[: len(lines) // 2]), encoding="utf-8")
    for name in ("scores.parquet", "summary.csv", "summary.md", "report.html"):
        (run / name).unlink(missing_ok=True)


def _dialogue_round(dest: Path) -> Path:
    """The dialogue-judge tests' slice of round 1 (every 40th worker): their conftest, loaded by its path."""
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "tasks" / "dialoguejudge" / "conftest.py"
    spec = importlib.util.spec_from_file_location("dialoguejudge_conftest", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.write_subset(dest, 40)


def _shared(name: str, probe: str) -> Path:
    path = SHARED / name
    if not (path / probe).exists():
        pytest.skip(f"the public {name} data is not beside the checkout ({path})")
    return path


@pytest.fixture(scope="module")
def builtin_run(tmp_path_factory: pytest.TempPathFactory) -> MadeRun:
    from emocaustics.jobs.spec import JobSpec

    tmp = tmp_path_factory.mktemp("builtin")
    human = _shared("humaneval", "hits_data_FreeTopicRound1.json")
    rnd = _dialogue_round(tmp / "round")
    import emocaustics.models.embedders as embedders

    mp = pytest.MonkeyPatch()
    mp.setattr(embedders, "make_embedder", lambda *a, **k: TextEmbedder())  # narrative's similarity, no model
    mp.setenv("EMOCAUSTICS_AER_DATA", str(_shared("aer", "sample_data/questions.jsonl")))
    mp.setenv("EMOCAUSTICS_ECAC_DATA", str(_shared("ecac", "Subtask_1_test.json")))
    mp.setenv("EMOCAUSTICS_HUMANEVAL_DATA", str(human))
    job = JobSpec.model_validate({
        "name": "matrix-builtin", "output": str(tmp / "runs"), "cache": "off",
        "dataset": {"subset": "sample", "aer": {"split": "sample", "ids": ["q-1", "q-2", "q-3"]},
                    "ecpe": {"ids": [1401, 1403]}, "human": {"file": "hits_data_FreeTopicRound1.json"}},
        "runs": [{"task": "aer", "options": {"method": "oracle"}},
                 {"task": "aer", "options": {"method": "random"}},
                 {"task": "ecpe", "options": {"method": "oracle"}},
                 {"task": "ecpe", "options": {"method": "baseline"}},
                 {"task": "sextuple", "method": "oracle", "dataset": {"ids": [1, 2]}},
                 {"task": "emotion", "method": "baseline", "dataset": {"ids": [1, 2]}},
                 {"task": "narrative", "options": {"method": "files"}},
                 {"task": "human", "options": {"method": "process"}},
                 {"task": "dialogue-judge", "options": {"method": "oracle", "resamples": 50},
                  "dataset": {"data": str(rnd)}}],
        "scoring": {"judge": "none"}})
    try:
        folder, printed = _run(job, tmp / "run")
    finally:
        mp.undo()
    return MadeRun("builtin", folder, printed)
