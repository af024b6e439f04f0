"""SemEval-2026 Task 12, abductive event reasoning, as the task `aer` (see task.py; data in data.py, scoring in
scoring.py, prompts in prompts.py, the solver in solver.py, the command line in cli.py)."""

from emocaustics.core.task import register
from emocaustics.tasks.aer.task import AerTask

TASK = register(AerTask())
