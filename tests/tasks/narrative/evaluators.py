"""The component evaluators called on a story pair alone, for tests: each gets what `composite.score_story` hands it
(the character resolver, the event alignment, the relationship pairing, the taxonomy), built here the way score_story
builds them; a test may give its own resolver, alignment, pairing, taxonomy or text instead. `align_events` without a
resolver: the stories' own (score_story's)."""

from __future__ import annotations

from typing import Any

from emocaustics.tasks.narrative import actions, alignment, relationships, sentiment, spans
from emocaustics.tasks.narrative.characters import Resolver
from emocaustics.tasks.narrative.taxonomy import default_taxonomy


def align_events(pred: Any, gt: Any, text: str | None, resolve: Any = None) -> Any:
    return alignment.align_events(pred, gt, text, resolve or Resolver(gt.characters, pred.characters))


def _shared(pred: Any, gt: Any, alignment: Any = None, resolve: Any = None, pairing: Any = None,
            text: str | None = None) -> tuple[Any, Any, Any]:
    resolve = resolve or Resolver(gt.characters, pred.characters)
    text = text if text is not None else (gt.text or pred.text)
    align = alignment or align_events(pred, gt, text, resolve)
    return align, resolve, pairing or relationships.pair_relationships(pred, gt, align, resolve)


def evaluate_relationships(pred: Any, gt: Any, alignment: Any = None, resolve: Any = None,
                           pairing: Any = None) -> dict[str, Any]:
    return relationships.evaluate_relationships(pred, gt, *_shared(pred, gt, alignment, resolve, pairing))


def evaluate_sentiment(pred: Any, gt: Any, alignment: Any = None, resolve: Any = None, pairing: Any = None,
                       taxonomy: Any = None) -> dict[str, Any]:
    return sentiment.evaluate_sentiment(pred, gt, *_shared(pred, gt, alignment, resolve, pairing),
                                        taxonomy or default_taxonomy())


def evaluate_actions(pred: Any, gt: Any, alignment: Any = None, resolve: Any = None) -> dict[str, Any]:
    return actions.evaluate_actions(pred, gt, *_shared(pred, gt, alignment, resolve)[:2])


def evaluate_spans(pred: Any, gt: Any, alignment: Any = None, text: str | None = None, n_t: int = 2) -> dict[str, Any]:
    text = text if text is not None else (gt.text or pred.text)
    return spans.evaluate_spans(pred, gt, _shared(pred, gt, alignment, text=text)[0], text, n_t)
