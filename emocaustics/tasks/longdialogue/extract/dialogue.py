"""One dialogue of an extraction method: its work item, its state machine, and what the plan needs to place it.

`solve_dialogue(llm, item, emb, stats)` is the whole method for one dialogue (tens of dependent calls for `window`);
the EmoCaustics task's `solve` calls it, and the shared plan (`solve.plan`) runs it *inside* a replica actor,
next to the engine, so that each dependent step is a local call there instead of a round trip from the driver.
The item (`make_item`) is the task's solver view of a dialogue: its utterances, the method's config and, for chains
built on a sextuple run, that run's prediction. The dry run runs the same state machine (`task.dry_solve`).
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, model_validator

from emocaustics.core.task import SolveFailed
from emocaustics.tasks.longdialogue.extract import chains as chain_methods
from emocaustics.tasks.longdialogue.extract import sextuple as sx
from emocaustics.solve.ask import Asker, StepFailed
from emocaustics.tasks.longdialogue.embeddings import EmbeddingFailed, Embeddings, pack
from emocaustics.tasks.longdialogue.extract.knobs import ExtractKnobs
from emocaustics.tasks.longdialogue.extract.prompts import SYSTEM
from emocaustics.tasks.longdialogue.extract.windows import DEFAULT_WINDOWS, windows

# Prompt characters that cost a replica about as much as generating one answer of an utterance (item_weight). A coarse
# calibration on the simulated Qwen2.5-72B on 4x H100 (benchmarks/sim_engine.py): alone on a replica, a 165-utterance
# dialogue's rag / window runs cost 2.6x / 3.1x its direct run; 1200 weighs them 3.3x / 2.8x (issue 31).
PROMPT_CHARS_PER_ANSWER = 1200


class _Task(BaseModel):
    """`task`, in a base of its own so that it stays ExtractConfig's first field (pydantic puts a base's fields
    first; the manifest's `config` has always started with it)."""

    task: Literal["sextuple", "emotion"]


class ExtractConfig(ExtractKnobs, _Task):
    """Everything that decides what a run asks the model; recorded in the manifest."""

    # The knobs are `ExtractKnobs`'s (declared once, shared with the task's options); `method` is narrowed here.
    model_config = ConfigDict(extra="forbid")

    method: Literal["direct", "rag", "window"]

    @model_validator(mode="after")
    def _check(self) -> "ExtractConfig":
        if self.task == "emotion" and self.method == "rag":
            raise ValueError("emotion chains have the methods direct and window (rag is a sextuple method)")
        k, s = self.k, self.s
        if s > k:
            raise ValueError(f"step {s} is larger than window {k}")
        return self

    @property
    def k(self) -> int:
        return self.window or DEFAULT_WINDOWS[self.task][0]

    @property
    def s(self) -> int:
        return self.step or DEFAULT_WINDOWS[self.task][1]

    def needs_embeddings(self, has_prior: bool, utterances: int) -> bool:
        """Whether a dialogue of this many utterances may consult its embeddings (its side texts are embedded)."""
        if self.task == "sextuple" and self.method == "rag":
            return sx.retrieves(utterances, self.k, self.top_k)
        if self.task == "sextuple":
            return self.method == "window"
        return self.method == "window" and not has_prior  # chains build their own sextuple window run then

    def window_settings(self) -> sx.WindowSettings:
        k, s = (self.k, self.s) if self.task == "sextuple" else DEFAULT_WINDOWS["sextuple"]
        return sx.WindowSettings(k=k, s=s, join_threshold=self.join_threshold, event_context=self.event_context,
                                 max_events=self.max_events, max_log_lines=self.max_log_lines)


def make_item(dialogue_id: int, sentences: list[str], holders: list[str], cfg: ExtractConfig,
              emb: np.ndarray | None = None, prior: list[dict] | None = None) -> dict[str, Any]:
    """One dialogue as a plain, serialisable work item (it travels to a Ray actor)."""
    return {"id": int(dialogue_id), "sentences": list(sentences), "holders": list(holders),
            "config": cfg.model_dump(), "emb": None if emb is None else pack(emb), "prior": prior}


def item_affinity(item: dict[str, Any]) -> str:
    """One replica per (dialogue, config): a dialogue's prompts within one config share prefixes (prefix-cache hits);
    across configs the templates differ, so tying all configs of a dialogue to one replica would only unbalance. Except
    one: an emotion `window` run without a prior sextuple run makes its own, whose prompts are those of the sextuple
    `window` run of the same dialogue and window settings; both get that run's key, so one prefix cache serves both (at
    64 simulated replicas this took the paper grid from 626 to 574 simulated seconds; issue 31)."""
    c = item["config"]
    if c["method"] == "window" and (c["task"] == "sextuple" or item.get("prior") is None):
        ws = ExtractConfig.model_validate(c).window_settings()
        return f"{item['id']}:sextuple:window:{ws.k}:{ws.s}"
    return f"{item['id']}:{c['task']}:{c['method']}:{c.get('window')}:{c.get('step')}"


def item_weight(item: dict[str, Any]) -> int:
    """Expected cost of a dialogue-run for load balancing, in answers of about one utterance's size: the answers it
    generates, plus the prompt text that no earlier prompt of the run shares (a prefix cache cannot serve it) at
    PROMPT_CHARS_PER_ANSWER. Utterances alone overrate a long dialogue's chain `direct` run (one bounded answer per
    holder) and underrate `window` (pass 1 answers every utterance too); in a mixed grid that unbalanced the replicas
    (busiest at 1.10x the mean in the 10x scale benchmark). Answers alone underrate `rag` and `window` on dialogues of
    long utterances: every rag prompt starts with its retrieved lines and every window shows K new-to-the-cache
    utterances; alone on a simulated replica a rag run of 165 utterances of ~117 characters cost 2.6x its `direct` run,
    one of 52 utterances of ~16 characters 1.0x (issue 31)."""
    n, chars = len(item["sentences"]), sum(len(s) for s in item["sentences"])
    cfg = ExtractConfig.model_validate(item["config"])
    ws = cfg.window_settings()
    window_prompts = 2 * ws.k * chars / ws.s  # each window's text, shown once in pass 1 and once in pass 2
    if cfg.task == "sextuple":
        if cfg.method == "direct":
            return n  # the dialogue is the shared prefix of every call
        if cfg.method == "rag":
            return n + round((cfg.k + cfg.top_k + 1) * chars / PROMPT_CHARS_PER_ANSWER)
        return 2 * n + round(window_prompts / PROMPT_CHARS_PER_ANSWER)
    holders = len(set(item["holders"]))
    if cfg.method == "direct":
        return 3 * holders  # at most 3 events x 4 emotions per holder
    own_sextuples = 2 * n + round(window_prompts / PROMPT_CHARS_PER_ANSWER) if item.get("prior") is None else 0
    return own_sextuples + 3 * len(windows(n, cfg.k, cfg.s)) + holders  # chain windows, then the merges


def item_chain(item: dict[str, Any]) -> int:
    """The answers of a dialogue-run that wait for each other in sequence (its critical path, for placement), in
    `item_weight`'s unit: `window`'s pass 1 answers every utterance, window after window, then a round of pass 2
    answers side by side (1); the chain method adds one per chain window and the merge. `direct` and `rag` answer side
    by side: 1. (Counting calls instead rated a chain run's cheap chain windows like pass-1 windows; alone on a
    simulated replica both kinds of run take ~1.4 s per unit of this measure: benchmarks/scale_bench.py.)"""
    cfg = ExtractConfig.model_validate(item["config"])
    if cfg.method != "window":
        return 1
    n = len(item["sentences"])
    own = n + 1 if cfg.task == "sextuple" or item.get("prior") is None else 0
    return own if cfg.task == "sextuple" else own + len(windows(n, cfg.k, cfg.s)) + 1


async def _method(asker: Asker, cfg: ExtractConfig, d: sx.DialogueInput, emb: sx.Embeddings | None,
                  prior: list[dict] | None) -> Any:
    if cfg.task == "sextuple":
        if cfg.method == "direct":
            return await sx.direct(asker, d)
        if cfg.method == "rag":
            return await sx.rag(asker, d, emb, k=cfg.k, top_k=cfg.top_k, threshold=cfg.rag_threshold)
        records, _ = await sx.window(asker, d, emb, cfg.window_settings())
        return records
    if cfg.method == "direct":
        return chain_methods.to_json(d, await chain_methods.direct(asker, d))
    if prior is None:  # the chain windows and the merge wait for this sextuple run
        then = len(windows(len(d), cfg.k, cfg.s)) + 1
        prior, _ = await sx.window(asker, d, emb, cfg.window_settings(), then=then)
    built = await chain_methods.window(asker, d, prior, k=cfg.k, s=cfg.s)
    return chain_methods.to_json(d, await chain_methods.merge(asker, built))


async def solve_dialogue(llm: Any, item: dict[str, Any], emb: Embeddings | None, stats: dict[str, Any]) -> Any:
    """The state machine of one dialogue: its prediction, or `SolveFailed` naming the step and the reason. `stats`
    receives what the asker counted (re-asks and unparseable answers beside the calls) and why it re-asked."""
    cfg = ExtractConfig.model_validate(item["config"])
    d = sx.DialogueInput(int(item["id"]), tuple(item["sentences"]), tuple(item["holders"]))
    asker = Asker(llm, system=SYSTEM, affinity=item_affinity(item), retries=cfg.retries,
                  max_tokens_cap=cfg.max_tokens_cap)
    try:
        if len(d) == 0:
            raise StepFailed("input", "the dialogue has no utterances")
        return await _method(asker, cfg, d, emb, item.get("prior"))
    except ValueError as exc:  # e.g. a prior sextuple prediction of the wrong length
        raise SolveFailed("input", str(exc)) from None
    except EmbeddingFailed as exc:
        raise SolveFailed("embedding", str(exc)) from None
    finally:
        stats.update(asker.stats.to_json())
        stats["retry_reasons"] = asker.retry_reasons

