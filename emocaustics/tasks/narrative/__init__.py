"""JSON-v3 narrative annotation: component evaluators, boundary similarity, the ground-truth-incomplete rule, and an
LLM annotator. Importing this package registers the `narrative` task."""

from emocaustics.core.task import register
from emocaustics.tasks.narrative.task import NarrativeTask

register(NarrativeTask())
