"""One folder per evaluation task. A task package registers its `Task` objects at import
(`emocaustics.core.task.register`) and may have a `cli` module with `register(subparsers)` (its own top-level verbs)
and/or `register_score(score_subparsers)` (its `emocaustics score <task>` verb). The core finds them by listing this
folder; adding a task is adding a folder."""
