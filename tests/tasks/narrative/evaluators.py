"""The component evaluators called on a story pair alone, for tests: each gets what `composite.score_story` hands it
(the character resolver, the event alignment, the relationship pairing, the taxonomy), built here the way score_story
builds them; a test may give its own resolver, alignment, pairing, taxonomy or text instead."""

from __future__ import annotations

from typing import Any

from emocaustics.tasks.narrative import actions, relationships, sentiment, spans
from emocaustics.tasks.narrative.alignment import align_events
from emocaustics.tasks.narrative.characters import Resolver
from emocaustics.tasks.narrative.taxonomy import default_taxonomy


def _shared(pred: Any, gt: Any, alignment: Any = None, resolve: Any = None, pairing: Any = None,
            text: str | None = None) -> tuple[Any, Any, Any]:
    resolve = resolve or Resolver(gt.characters, pred.characters)
    text = text if text is not None else (gt.text or pred.text)
    alignment = alignment or align_events(pred, gt, text, resolve)
    return alignment, resolve, pairing or relationships.pair_relationships(pred, gt, alignment, resolve)


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
