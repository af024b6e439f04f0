"""Tasks written in YAML (issue 43 point 4): a task file names a dataset, its field mapping, a prompt template and
the core's solver and scorer by name (`spec.py` says the keys). A path ending in `.yaml` or `.yml` is a task name
wherever one is asked for (`emocaustics eval tasks/capitals.yaml`, a job's `task: tasks/capitals.yaml`, `score`,
`data fetch`); the task then goes by the file's `name:` in labels, tables and the report, and in the same process
by that name too. The core reads such files with this package's `task_from_file`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, create_model

from emocaustics.core.compose import ComposedTask
from emocaustics.core.content import content_hash
from emocaustics.core.errors import UsageError
from emocaustics.core.task import DatasetOptions, Loaded, Sample
from emocaustics.tasks.yamltask import data
from emocaustics.tasks.yamltask.spec import read_task_file, where


def answer_model(max_length: int) -> type[BaseModel]:
    return create_model("Answer", __config__=ConfigDict(extra="forbid"), answer=(str, Field(max_length=max_length)))


def build_solver(spec: Any) -> Any:
    from emocaustics.solve.solvers import Generate, MultipleChoice

    if spec.name == "generate":
        return Generate(answer_model(spec.max_length), spec.prompt, system=spec.system)
    return MultipleChoice(spec.prompt, choices=spec.choices, n=spec.n, temperature=spec.temperature, seed=spec.seed,
                          system=spec.system)


def build_scorer(spec: Any) -> Any:
    from emocaustics.scoring import scorers

    if spec.name == "llm_judge":
        return scorers.LLMJudge(spec.field, **({"prompt": spec.prompt} if spec.prompt else {}))
    if spec.name == "exact_match":
        return scorers.ExactMatch(spec.field, normalize=spec.normalize)
    return {"set_match": scorers.SetMatch, "token_f1": scorers.TokenF1}[spec.name](spec.field)


class YamlTask(ComposedTask):
    def __init__(self, path: Path) -> None:
        spec, lines = read_task_file(path)
        self.path, self.spec, self.lines = path, spec, lines
        ds = spec.dataset
        self.origin = (path.parent / ds.path) if ds.path else \
            (path.parent / ds.saved if ds.saved else data.saved_default(ds.hf or "", ds.revision or ""))
        super().__init__(spec.name, self.read, build_solver(spec.solver), build_scorer(spec.scorer),
                         description=spec.description or f"{spec.name} (task file {path.name})",
                         method=spec.solver.name)
        self.data_sources = (data.LocalData(spec.name, self.check, self.origin, ds.revision),)
        self.prompts_version = content_hash([self.prompts_version, ds.hf, ds.revision])

    def _at(self, *loc: Any) -> str:
        return where(self.path, self.lines, loc)

    def read(self, options: DatasetOptions) -> Loaded:
        ds, fields = self.spec.dataset, self.spec.fields
        origin = Path(options.data) if options.data else self.origin
        if ds.path is not None:
            if not origin.is_file() and (self.data_sources[0].cache_dir() / origin.name).is_file():
                origin = self.data_sources[0].cache_dir() / origin.name  # the copy `data fetch` made
            if not origin.is_file():
                raise UsageError(f"{self._at('dataset', 'path')}: no such file {origin}")
            rows = data.read_local(origin, ds.format)
            digest = data.sha256_of([origin])
            if ds.sha256 and digest != ds.sha256.lower():
                raise UsageError(f"{self._at('dataset', 'sha256')}: {origin} has sha256 {digest}, not the one "
                                 "pinned: the file changed")
        else:
            if not origin.is_dir():
                raise UsageError(f"{self._at('dataset', 'hf')}: no saved copy of {ds.hf} at revision {ds.revision} "
                                 f"in {origin} (save it there with datasets: load_dataset({ds.hf!r}, revision="
                                 f"{ds.revision!r}).save_to_disk(...), or name its folder as dataset.saved)")
            rows, files = data.read_saved(origin, ds.split)
            digest = data.sha256_of(files)
        self.check_columns(rows, origin)
        columns = [c for c in rows[0] if c != "__where"] if rows else []
        inputs = fields.input or [c for c in columns if c not in (fields.target, fields.id)]
        if left := [c for c in self.prompt_columns() if c not in inputs]:  # else every sample fails when solved
            why = ("the id column (fields.id), no input: write {id} for the sample's id" if left[0] == fields.id else
                   "the target column (fields.target): the model would be shown the answer" if left[0] == fields.target
                   else f"which fields.input leaves out (it gives {', '.join(inputs)})")
            raise UsageError(f"{self._at('solver', 'prompt')}: the solver needs {left[0]!r}, {why}")
        samples = data.to_samples(rows, str(origin), fields.target, fields.id, inputs, self.prompt_columns())
        return Loaded(samples, info={"dataset": self.name, "task_file": str(self.path.resolve()), "root": str(origin),
                                     "sha256": digest, "hf": ds.hf, "revision": ds.revision, "split": ds.split,
                                     "samples": len(samples)})

    def check_columns(self, rows: list[dict[str, Any]], origin: Path) -> None:
        """Each column the task file names (fields, the template's fields) is one of the data's: else the line."""
        if not rows:
            raise UsageError(f"{self._at('dataset')}: {origin} holds no records")
        columns = [c for c in rows[0] if c != "__where"]
        fields, solver = self.spec.fields, self.spec.solver
        named = [(("fields", "target"), fields.target), (("fields", "id"), fields.id)]
        named += [(("fields", "input", i), c) for i, c in enumerate(fields.input or [])]
        if solver.name == "multiple_choice":
            named.append((("solver", "choices"), solver.choices))
        named += [(("solver", "prompt"), f) for f in self.prompt_columns() if f != getattr(solver, "choices", None)]
        for loc, col in named:
            if col is not None and col not in columns:
                raise UsageError(f"{self._at(*loc)}: column {col!r} is not in {origin} (its columns: "
                                 f"{', '.join(columns)})")

    def prompt_columns(self) -> list[str]:
        """The columns the solver reads: its template's fields (but `id`, and `choices`, which multiple choice
        fills) and the column of the choices."""
        from emocaustics.solve.solvers import template_fields

        solver = self.spec.solver
        mc = solver.name == "multiple_choice"
        used = [f for f in template_fields(solver.prompt) if f != "id" and not (mc and f == "choices")]
        return used + ([solver.choices] if mc else [])

    def check(self) -> dict[str, Any]:
        loaded = self.read(DatasetOptions())
        return {"sha256": loaded.info["sha256"], "samples": len(loaded.samples), "revision": loaded.info["revision"]}

    def fingerprint(self, sample: Sample) -> str:
        """The revision is part of what the solver saw: predictions made on another one are caught when scored."""
        return content_hash([self.spec.dataset.revision, sample.input])


task_from_file = YamlTask  # how core/task.py reads a file whose suffix tasks.BUILT_IN gives this package
