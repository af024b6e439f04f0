"""The options of `emocaustics eval` (and the keywords of `jobs.oneline.eval_job` / `ec.eval`), one row each: the
command line's parser (`cli.eval`), the one-liner's job (`oneline.eval_job`: where each value lands, and each spec
error's path in the words of its flag) and the docs check (tests/docs) all read this table. Light on purpose: `eval
--help` imports it and nothing else of the job layer."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class EvalOption:
    """One option of `emocaustics eval` (and keyword of `eval_job` / `ec.eval`): adding one is adding a row to
    `EVAL_OPTIONS` and its words to the docs (tests/docs checks both). `goes` says where its value lands in the
    one-config job: `job` (a job field), `run` (a key of the run), `select`, `scoring`, `model` (a key of the model's
    entry), `option` (a task option), `dataset` (a dataset option); `eval` is an argument `eval_job` reads itself,
    `command` one the command uses outside the job. `argparse`: the rest of its `add_argument` settings."""

    name: str
    goes: str
    help: str
    flag: str = ""  # default --name-with-dashes
    argparse: dict[str, Any] = field(default_factory=dict)

    @property
    def switch(self) -> str:
        return self.flag or "--" + self.name.replace("_", "-")


def _ids(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


EVAL_OPTIONS = [
    EvalOption("model", "eval", "model spec (see below); none for a calibration method"),
    EvalOption("method", "eval", "the task's method (default: its own, e.g. aer llm)"),
    EvalOption("split", "eval", "the dataset's split or subset (aer: sample|dev|test|train; sextuple/emotion: "
                                "sample|paper-100|long-20|all)"),
    EvalOption("limit", "select", "only the first N samples (after --ids)", argparse={"type": int}),
    EvalOption("ids", "select", "only these sample ids (comma-separated; repeatable)",
               argparse={"type": _ids, "action": "extend"}),
    EvalOption("options", "eval", "a task option (value read as YAML: 3, true, [a, b]); repeatable", "-T",
               {"action": "append", "metavar": "KEY=VALUE"}),
    EvalOption("dataset", "eval", "a dataset option (e.g. data=PATH); repeatable", "-D",
               {"action": "append", "metavar": "KEY=VALUE"}),
    EvalOption("judge", "scoring", "the LLM judge of scoring (a model spec; default none)"),
    EvalOption("embedder", "scoring", "the scoring embedder (default minilm)"),
    EvalOption("submission_file", "command", "also copy the task's submission file there (aer: .jsonl or .zip; "
                                             "ecpe: .zip)", argparse={"metavar": "PATH"}),
    EvalOption("out", "command", "run folder (default: runs/eval-<task>-<method>[-<model>]/<time>)"),
    EvalOption("no_score", "job", "solve and write the predictions only (predictions/<config>/): no scores, tables "
                                  "or report", argparse={"action": "store_true"}),
    EvalOption("epochs", "run", "solve each sample N times and reduce (docs/jobs.md, epochs and reducers)",
               argparse={"type": int, "metavar": "N"}),
    EvalOption("reducer", "run", "mean, mode, max or pass@K (default: the task's own)"),
    EvalOption("token_limit", "run", "a sample that generates more than N tokens over its calls is a failure row",
               argparse={"type": int, "metavar": "N"}),
    EvalOption("time_limit", "run", "a sample still running SECONDS after its first call is a failure row",
               argparse={"type": float, "metavar": "SECONDS"}),
    EvalOption("config_time_limit", "run", "samples still running (or not started) SECONDS after the config started "
                                           "are failures", argparse={"type": float, "metavar": "SECONDS"}),
]

# Where a row of `EVAL_OPTIONS` lands, by its `goes`: the path in the job (what a spec error names).
PLACES = {"job": "{name}", "run": "runs.0.{name}", "select": "select.{name}", "scoring": "scoring.{name}",
          "model": "models.{key}.{name}", "option": "runs.0.options.{name}", "dataset": "dataset.{task}.{name}"}
