"""What ground truth an EmoCaustics task scores against (`core.groundtruth`): `sextuple`, the sextuples on the chat
files' utterances; `emotion`, the emotion chains of the emo files that pair with the dialogues. A selection in which
no dialogue has any is refused before a run (an empty `emo/` gave "100 samples, 0 failures, score None", issue 41).
And which dialogues are the ground truth: `-D data=DIR` without a subset is every dialogue of DIR."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from emocaustics.core.errors import UsageError


class DialogueGroundTruth:
    """Mixed into the EmoCaustics task: its `check_ground_truth`."""

    name: str

    def check_ground_truth(self, loaded: Any, options: Any) -> None:
        dialogues = [s.input for s in loaded.samples]
        root = Path(loaded.info.get("root", "."))
        n = f"{len(dialogues)} selected dialogue(s)"
        if self.name == "emotion" and not any(d.chains for d in dialogues):
            raise UsageError(f"{root / 'emo'}: no emotion-chain annotation (emo_N.json) pairs with any of the {n}: "
                             "the emotion task's ground truth is missing or empty; nothing to score against")
        if self.name == "sextuple" and not any(u.gt for d in dialogues for u in d.utterances):
            raise UsageError(f"{root / 'chat'}: no utterance of the {n} has a ground-truth sextuple: the sextuple "
                             "task's ground truth is missing or empty; nothing to score against")


def all_of_given_data(cls: Any, raw: Any) -> Any:
    """The dataset options' default subset (a pydantic before-validator of the task's `Dataset`): every dialogue of
    an explicit data folder, as in every other command (`data.subsets.default_subset`); a run with `-D data=DIR` and
    no subset read the repo's sample dialogues instead of DIR."""
    return {**raw, "subset": "all"} if isinstance(raw, dict) and raw.get("data") and "subset" not in raw else raw
