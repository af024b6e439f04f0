"""EmoCaustics: emotion sextuples and emotion event chains of long Chinese dialogues (tasks `sextuple`, `emotion`).

- `data/`    the published dataset: fetch, load, pairing of chat/emo files, defects reported as data, subsets;
- `extract/` the three extraction methods (direct, rag, window + event bucket; chains direct, window + merge) and
             their Ray Data plan;
- `score/`   the spec-exact scorer (embedding thresholds, LLM judge, reference-compat mode) and calibration
             predictors;
- `task.py`  both tasks on the core's task contract, with their side inputs (`side.py`) and prediction files
             (`extract/output.py`); `cli.py` the `extract`, `data` and `score` verbs;
- `report.py` the K x S heatmaps and the by-length table of the report.
"""

from emocaustics.core.task import register
from emocaustics.tasks.longdialogue.task import EmoCausticsTask

register(EmoCausticsTask("sextuple", "EmoCaustics emotion sextuples per utterance", ("direct", "rag", "window")))
register(EmoCausticsTask("emotion", "EmoCaustics emotion event chains per speaker", ("direct", "window")))
