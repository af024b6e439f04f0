"""Sextuple prediction files for tests: a dialogue's candidates per utterance written as the reference's records
(`output_chat_N.json`), through the package's own writer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from emocaustics.tasks.longdialogue.score.predictions import write_sextuple_predictions


def write_candidates(folder: Path, dialogue_id: int, dialogue: Any, candidates: Any) -> Path:
    """`candidates[i]` (a list of `Sextuple`) as the record of the dialogue's utterance i."""
    records = [{"input_sentence": u.sentence, "holder": u.holder, "final_model_response": [c.to_json() for c in cands]}
               for u, cands in zip(dialogue.utterances, candidates, strict=True)]
    return write_sextuple_predictions(folder, dialogue_id, records)
