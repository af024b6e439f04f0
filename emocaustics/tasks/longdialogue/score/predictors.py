"""Built-in calibration predictors; they produce predictions in the same in-memory form as parsed prediction files
(`predictions.SextuplePrediction` / `Chains`), so they go through the very same scoring path.

- `oracle`: the ground truth itself. It must score exactly 1.0 on both tasks with any embedder (identical texts
  have cosine 1), which checks the scorer end to end.
- `baseline`: a trivial non-LLM predictor, the floor every method must beat. It never looks at the annotations:
  sextuples get the fixed majority label of the published data ("negative"), the previous speaker as target, and the
  utterance itself as opinion and rationale; chains get, per speaker, one event whose single emotion is "negative",
  caused by the speaker they answer most often, with their first utterance as the reason.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from emocaustics.tasks.longdialogue.data.schema import Chains, Dialogue, Emotion, Event, Sextuple
from emocaustics.tasks.longdialogue.score.predictions import SextuplePrediction

PREDICTORS = ("oracle", "baseline")
MAJORITY_LABEL = "negative"  # the most frequent Sentiment/state of the published data; fixed, not read from the GT


def oracle_sextuples(d: Dialogue) -> SextuplePrediction:
    return [[u.gt] if u.gt is not None and not u.gt.is_empty() else [] for u in d.utterances]


def oracle_chains(d: Dialogue) -> Chains | str:
    return dict(d.chains) if d.chains is not None else "ground truth has no usable emotion chains"


def baseline_sextuples(d: Dialogue) -> SextuplePrediction:
    out: SextuplePrediction = []
    prev = ""
    for u in d.utterances:
        out.append([Sextuple(target=prev, aspect="", opinion=u.sentence, sentiment=MAJORITY_LABEL,
                             rationale=u.sentence)])
        prev = u.holder
    return out


def baseline_chains(d: Dialogue) -> Chains:
    answers: dict[str, Counter[str]] = {}
    first: dict[str, str] = {}
    prev = None
    for u in d.utterances:
        first.setdefault(u.holder, u.sentence)
        if prev is not None and prev != u.holder:
            answers.setdefault(u.holder, Counter())[prev] += 1
        prev = u.holder
    chains: Chains = {}
    for h in d.holders:
        src = answers[h].most_common(1)[0][0] if h in answers else h
        chains[h] = (Event("对话中的争执", (Emotion(MAJORITY_LABEL, first[h], (src,), src),)),)
    return chains


def predict(name: str, task: str, dialogues: Sequence[Dialogue]) -> dict[int, object]:
    """dialogue id -> prediction (or failure reason) from a built-in predictor; task is 'sextuple' or 'emotion'."""
    table = {("oracle", "sextuple"): oracle_sextuples, ("oracle", "emotion"): oracle_chains,
             ("baseline", "sextuple"): baseline_sextuples, ("baseline", "emotion"): baseline_chains}
    fn = table.get((name, task))
    if fn is None:
        raise ValueError(f"no built-in predictor {name!r} for task {task!r} (have {PREDICTORS})")
    return {d.id: fn(d) for d in dialogues}
