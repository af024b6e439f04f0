"""A small AER job through the OpenAI-compatible endpoint stand-in (a real HTTP server on loopback), for the eval log
and viewer tests: 12 questions on 3 topics of 3 documents each (gold "A", what the stand-in answers), question 5
answered with invalid JSON on every request (it fails after a re-ask), the oracle beside the model configs."""

from __future__ import annotations

from pathlib import Path

from emocaustics.cli import main
from fakes.openai_chat import Faults
from fakes.openai_routed import RoutedFakeServer
from tasks.aer.aer_fixtures import doc, question, topic, write_dataset

N = 12
DOOMED = "q-5"


def marker(n: int) -> str:
    """A text in every prompt about question n and in no other."""
    t = 1 + (n - 1) // 4
    return question(n, t)["target_event"].split(f" town {t} ")[1]  # "closed after event N."


def document_text(topic_id: int, i: int) -> str:
    return doc(i, topic_id)["content"]


def dataset(root: Path, plant: str | None = None) -> Path:
    """`plant`: a text put into question 7's option D (it is then in that question's prompts)."""
    over = {"option_D": f"A bridge was painted by {plant}."} if plant else {}
    sample = [question(n, 1 + (n - 1) // 4, "A", **(over if n == 7 else {})) for n in range(1, N + 1)]
    return write_dataset(root, {"sample": (sample, [topic(t) for t in (1, 2, 3)])})


def job_yaml(data: Path, base_url: str, *, contexts: tuple[str, ...] = ("full",), log: str = "") -> str:
    runs = "\n".join(f"  - {{task: aer, options: {{method: llm, prompt: zero-shot, context: {c}}}, model: api}}"
                     for c in contexts)
    return f"""
name: evallog-aer
dataset: {{aer: {{split: sample, data: {data}}}}}
models: {{api: {{spec: "openai:fake-chat@{base_url}", concurrency: 8}}}}
runs:
  - {{task: aer, options: {{method: oracle}}}}
{runs}
scoring: {{judge: none}}
{log}
"""


def run_job(tmp: Path, server: RoutedFakeServer, *, resume: bool = False, **kw) -> tuple[int, Path]:
    job = tmp / "job.yaml"
    if not job.exists():
        job.write_text(job_yaml(tmp / "data", server.base_url, **kw), encoding="utf-8")
    run_dir = tmp / "run"
    rc = main(["run", str(job), "--out", str(run_dir), *(["--resume"] if resume else [])])
    return rc, run_dir


def server(expected_key: str | None = None) -> RoutedFakeServer:
    return RoutedFakeServer(Faults(), routes={marker(5): "invalid"}, expected_key=expected_key)
