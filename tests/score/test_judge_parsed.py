"""The job's judge reaches the LLM-judge scorer parsed (issue 40 point 1): `scoring.judge` is resolved with the job
(`jobs.configs.Resolved.judge`) and the scorer asks that model; a command's --judge is parsed where it is given."""

from __future__ import annotations

import os
from pathlib import Path

import polars as pl
import pytest

from emocaustics.cli import main
from emocaustics.core.task import get_task, unregister
from fakes.openai_chat import FakeOpenAIServer


def test_the_job_judge_answers_the_llm_judge_scorer(tmp_path: Path, monkeypatch) -> None:
    pl.DataFrame({"q": ["Name a prime"], "gold": ["2"]}).write_csv(tmp_path / "data.csv")
    (tmp_path / "judged.yaml").write_text("name: judged-by-job\ndataset: {path: data.csv}\nfields: {target: gold}\n"
                                          "solver: {name: generate, prompt: '{q}'}\nscorer: {name: llm_judge}\n")
    get_task(str(tmp_path / "judged.yaml"))
    try:
        with FakeOpenAIServer() as server:
            monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
            assert main(["eval", "judged-by-job", "--model", "openai:fake-chat", "--judge", "openai:fake-judge",
                         "--out", str(tmp_path / "run")]) == 0
            asked = [b["model"] for b in server.bodies]
    finally:
        unregister("judged-by-job")
    assert asked == ["fake-chat", "fake-judge"]  # the answer, then the judge's verdict on it
    assert pl.read_parquet(tmp_path / "run" / "scores.parquet")["status"].to_list() == ["ok"]  # a verdict, no failure


@pytest.mark.skipif(not Path(os.environ.get("EMOCAUSTICS_DATA", "/nonexistent"), "chat").is_dir(), reason="no data")
def test_the_score_command_parses_its_judge_where_it_is_given(capsys) -> None:  # the longdialogue score's --judge
    assert main(["score", "emotion", "--pred", "oracle", "--subset", "paper-100", "--ids", "1", "--engine", "local",
                 "--judge", "openai:m@http://127.0.0.1:9/v1?replicas=2"]) == 2
    assert "'openai:m@http://127.0.0.1:9/v1?replicas=2': unknown option 'replicas'" in capsys.readouterr().err
