"""A task file in YAML, read and checked: every error names the file, the line and the key.

    name: capitals                       # the task's name in labels, tables and the report
    description: capitals of countries
    dataset:
      path: capitals.jsonl               # a local .jsonl / .csv / .parquet file (relative to this file), or
      # hf: org/name                     # a Hugging Face dataset at a pinned revision, from its locally saved copy
      # revision: 0123abcd               #   (`save_to_disk`): `saved:` its folder, default the fetch cache
      # split: test
      sha256: ...                        # optional: the file's hash, checked at every load (`data fetch` prints it)
    fields: {id: qid, target: answer}    # columns: the sample id (default: the row number), the target, and the
                                         # input columns (`input:`, default every other column)
    solver: {name: generate, prompt: "What is the capital of {country}?", max_length: 40}
    scorer: {name: exact_match}

Solvers (`solve/solvers.py`): `generate` (keys prompt, system, max_length: the answer is one bounded string) and
`multiple_choice` (prompt with `{choices}`, system, choices: the column of the choices, n, temperature, seed).
Scorers (`scoring/scorers.py`): `exact_match` (normalize), `set_match`, `token_f1`, `llm_judge` (prompt, field); each
takes `field` (a key of the prediction: default `answer`). A key given twice is refused as a job file's is.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from emocaustics.core.errors import UsageError


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DatasetSpec(Strict):
    path: str | None = None
    format: Literal["jsonl", "csv", "parquet"] | None = None  # default: from the file's suffix
    sha256: str | None = Field(None, pattern=r"^[0-9a-fA-F]{64}$")
    hf: str | None = None
    revision: str | None = None
    split: str | None = None
    saved: str | None = None

    @model_validator(mode="after")
    def _one_source(self) -> "DatasetSpec":
        if (self.path is None) == (self.hf is None):
            raise ValueError("give one of path (a local file) or hf (a Hugging Face dataset)")
        if self.hf is not None and not self.revision:
            raise ValueError(f"hf: {self.hf}: a revision is required (the commit or tag the saved copy is of)")
        if self.path is not None and (self.revision or self.saved or self.split):
            raise ValueError("revision, saved and split belong to an hf dataset, not to a local file")
        return self


class FieldsSpec(Strict):
    target: str
    id: str | None = None
    input: list[str] | None = None


class GenerateSpec(Strict):
    name: Literal["generate"]
    prompt: str
    system: str | None = None
    max_length: int = Field(200, ge=1, le=4000)


class MultipleChoiceSpec(Strict):
    name: Literal["multiple_choice"]
    prompt: str
    system: str | None = None
    choices: str = "choices"
    n: int = Field(1, ge=1, le=64)
    temperature: float = Field(0.7, ge=0.0, le=2.0)
    seed: int = 0


class MatchSpec(Strict):
    name: Literal["exact_match", "set_match", "token_f1"]
    field: str = "answer"
    normalize: bool = True


class JudgeSpec(Strict):
    name: Literal["llm_judge"]
    field: str = "answer"
    prompt: str | None = None


class TaskFile(Strict):
    name: str = Field(pattern=r"^[A-Za-z][A-Za-z0-9_-]*$")
    description: str = ""
    dataset: DatasetSpec
    fields: FieldsSpec
    solver: Annotated[GenerateSpec | MultipleChoiceSpec, Field(discriminator="name")]
    scorer: Annotated[MatchSpec | JudgeSpec, Field(discriminator="name")]


class Lines:
    """Where each key of a YAML document is: the node tree PyYAML composes, walked by a pydantic error's path."""

    def __init__(self, text: str) -> None:
        self.root = yaml.compose(text, Loader=yaml.SafeLoader)

    def line(self, loc: tuple[Any, ...]) -> int:
        """The line of the key at `loc`, or of the nearest mapping above it when it is missing."""
        node, line = self.root, 1 if self.root is None else self.root.start_mark.line + 1
        for part in loc:
            if isinstance(node, yaml.MappingNode):
                hit = next(((k, v) for k, v in node.value if k.value == part), None)
                if hit is None:
                    if any(k.value == "name" for k, _ in node.value) and isinstance(part, str):
                        continue  # the discriminator's tag in a union's path (solver -> generate -> prompt)
                    return line
                line, node = hit[0].start_mark.line + 1, hit[1]
            elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
                node = node.value[part]
                line = node.start_mark.line + 1
            else:
                return line
        return line


TAGS = ("generate", "multiple_choice", "exact_match", "set_match", "token_f1", "llm_judge")


def shown(loc: tuple[Any, ...]) -> str:
    """A key's path as the file writes it (a union's tag, which pydantic puts in the path, left out)."""
    return ".".join(str(p) for i, p in enumerate(loc) if not (i == 1 and p in TAGS)) or "(file)"


def where(path: Path, lines: Lines, loc: tuple[Any, ...]) -> str:
    return f"{path}: line {lines.line(loc)}: {shown(loc)}"


def read_task_file(path: Path) -> tuple[TaskFile, Lines]:
    """The task file, checked; a `UsageError` naming the file, the line and the key of the first problem."""
    from emocaustics.core.yamlkeys import DuplicateKey, safe_load_unique

    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"task file {path}: cannot read it: {exc.strerror or exc}") from None
    try:
        raw, lines = safe_load_unique(text), Lines(text)
    except DuplicateKey as exc:
        raise UsageError(f"{path}: {exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f"line {mark.line + 1}: " if mark is not None else ""
        raise UsageError(f"{path}: {at}not valid YAML: {getattr(exc, 'problem', None) or exc}") from None
    if not isinstance(raw, dict):
        raise UsageError(f"{path}: line 1: a task file is a mapping (name, dataset, fields, solver, scorer)")
    try:
        return TaskFile.model_validate(raw), lines
    except ValidationError as exc:
        raise UsageError(message(path, lines, exc.errors()[0])) from None


def message(path: Path, lines: Lines, err: dict[str, Any]) -> str:
    loc = tuple(err["loc"])
    kind, msg = err["type"], err["msg"].removeprefix("Value error, ")
    if kind == "missing":
        return f"{path}: line {lines.line(loc[:-1])}: {shown(loc[:-1])}: missing key {loc[-1]!r}"
    if kind == "extra_forbidden":
        return f"{where(path, lines, loc)}: unknown key"
    if kind == "union_tag_invalid":
        allowed = err["ctx"]["expected_tags"].replace("'", "")
        return f"{where(path, lines, (*loc, 'name'))}: unknown {loc[0]} {err['ctx']['tag']} (the core's {loc[0]}s: " \
               f"{allowed})"
    return f"{where(path, lines, loc)}: {msg}"
