"""SemEval-2024 Task 3 (emotion-cause pairs in conversations, ECF 2.0) as the task `ecpe`.

- `spans.py`      emotion categories and the official token rule for cause spans;
- `official.py`   the official metrics (strict, proportional, subtask 2) to the last digit, per-emotion tables;
- `validate.py`   the submission validator (named errors and warnings); `gold.py` gold reading, the same way;
- `scoring.py`    gold + prediction -> official figures, per-conversation counts, outcomes (CLI and task alike);
- `data.py`       locate / fetch / load the organisers' test files;
- `prompts.py`, `solver.py`  LLM extraction (`direct`, `utterance`); `predictors.py` `oracle`, `baseline`;
- `task.py`       the task on the core's interface; `cli.py` `emocaustics score ecpe` and `emocaustics ecpe ...`.
"""

from emocaustics.core.task import register
from emocaustics.tasks.ecpe.task import EcpeTask

TASK = register(EcpeTask())
