"""The extraction knobs, declared once: a job's task options (`task.EmoOptions`) and a dialogue's extraction config
(`dialogue.ExtractConfig`) both inherit them, so a knob added here reaches both (issue 26).

`method` comes first and is a plain string here; each user narrows it to the methods it knows (the task's options
add the calibration predictors `oracle` and `baseline`; an extraction config has the solver methods only). Pydantic
orders inherited fields base first and keeps a redeclared field where the base put it, so `model_dump` still lists
`method, window, step, ...` (after `task` in `ExtractConfig`, see there): manifests read as before.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class ExtractKnobs(BaseModel):
    """What decides how a method asks the model, besides the task."""

    model_config = ConfigDict(extra="forbid")

    method: str
    window: int | None = Field(default=None, ge=1)
    step: int | None = Field(default=None, ge=1)
    top_k: int = Field(default=3, ge=0)  # rag: retrieved earlier utterances
    rag_threshold: float = 0.5  # rag: minimum cosine of a retrieved utterance
    join_threshold: float = 0.85  # window: cosine for joining an event by embedding
    event_context: Literal["asof", "strict", "final"] = "asof"
    max_events: int = Field(default=8, ge=1)  # bucket events shown per prompt
    max_log_lines: int = Field(default=6, ge=1)  # log lines shown per event
    retries: int = Field(default=2, ge=0)
    max_tokens_cap: int = Field(default=4096, ge=16)  # max_tokens when the schema's bound is higher
