"""The task-neutral core: errors, the task interface and registry, samples and score rows, the one place that
connects to Ray, the per-sample output store and progress lines. Nothing here names a task."""
