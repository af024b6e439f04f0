"""One folder per evaluation task. A task package registers its `Task` objects at import
(`emocaustics.core.task.register`) and may have a `cli` module with `register(subparsers)` (its own top-level verbs)
and/or `register_score(score_subparsers)` (its `emocaustics score <task>` verb). Adding a task is adding a folder and
its line in `BUILT_IN`: the core imports a task's package when its name is asked for (start-up, issue 55)."""

# task name (or task-file suffix) -> the package whose import registers it
BUILT_IN = {"aer": "aer", "ecpe": "ecpe", "human": "human", "dialogue-judge": "dialoguejudge", "narrative": "narrative",
            "sextuple": "longdialogue", "emotion": "longdialogue", ".yaml": "yamltask", ".yml": "yamltask"}
