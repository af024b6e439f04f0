"""LLM judges measured like crowd workers (issue 56) as the task `dialogue-judge`: a model rates each conversation of
a human-assessment round and is put through the ACL 2022 method as one more worker.

- `data.py`       a round's conversations with the workers' ratings (the jsonl, or the upstream HIT_detail files);
- `prompts.py`    the judge's instructions, the criteria and the answer model;
- `agreement.py`  the judge as a worker (z, QC, system scores) and its agreement with the workers;
- `task.py`       `DialogueJudgeTask` on the task interface.
"""

from emocaustics.core.task import register
from emocaustics.tasks.dialoguejudge.task import DialogueJudgeTask

register(DialogueJudgeTask())
