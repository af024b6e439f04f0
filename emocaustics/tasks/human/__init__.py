"""Human assessment of open-domain dialogue systems (Ji et al., ACL 2022) as the task `human`.

- `data.py`          the normative JSON: reading, validation with named errors, locate / fetch;
- `method.py`        steps 1-6: reversal, per-worker z, quality control, pass rates, system scores, durations;
- `significance.py`  step 7: system significance, rater agreement, score-type correlations, self-replication;
- `outputs.py`       the original tool's files (CSV + XLSX), plots, JSON summary;
- `task.py`          `HumanTask` on the task interface; `report.py` its HTML report section;
- `cli.py`           `emocaustics human process` / `human replicate`.
"""

from emocaustics.core.task import register
from emocaustics.tasks.human.task import HumanTask

register(HumanTask())
