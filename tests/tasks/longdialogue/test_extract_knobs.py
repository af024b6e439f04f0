"""The extraction knobs are declared once (`extract.knobs.ExtractKnobs`) and reach both the job's task options
(`EmoOptions`) and a dialogue's extraction config (`ExtractConfig`) unchanged (issue 26)."""

import inspect

import pytest
from pydantic import ValidationError

from emocaustics.core.task import get_task
from emocaustics.tasks.longdialogue.extract.dialogue import ExtractConfig
from emocaustics.tasks.longdialogue.extract.knobs import ExtractKnobs
from emocaustics.tasks.longdialogue.task import EmoOptions

KNOBS = ["method", "window", "step", "top_k", "rag_threshold", "join_threshold", "event_context", "max_events",
         "max_log_lines", "retries", "max_tokens_cap"]


def test_the_knobs_are_declared_in_one_place_only():
    assert list(ExtractKnobs.model_fields) == KNOBS
    # field order as before the split: the manifest's `config` and a run's options list them in this order
    assert list(EmoOptions.model_fields) == KNOBS
    assert list(ExtractConfig.model_fields) == ["task", *KNOBS]
    # a knob redeclared (or added) in one of the two would show up among the class's own annotations
    assert set(inspect.get_annotations(EmoOptions)) == {"method", "legacy_run_keys"}
    assert set(inspect.get_annotations(ExtractConfig)) == {"method"}


@pytest.mark.parametrize("user", [EmoOptions, ExtractConfig])
def test_each_knob_keeps_the_declared_type_default_and_bounds(user):
    for name in KNOBS[1:]:  # method is narrowed by each user
        mine, declared = user.model_fields[name], ExtractKnobs.model_fields[name]
        assert (mine.annotation, mine.default, mine.metadata) == (declared.annotation, declared.default,
                                                                  declared.metadata), name


def test_method_is_narrowed_differently_and_the_bounds_hold_in_both():
    assert EmoOptions(method="oracle").method == "oracle"
    with pytest.raises(ValidationError, match="'direct', 'rag' or 'window'"):
        ExtractConfig(task="sextuple", method="oracle")
    for bad in ({"top_k": -1}, {"max_tokens_cap": 15}, {"window": 0}, {"event_context": "later"}):
        with pytest.raises(ValidationError):
            EmoOptions(method="rag", **bad)
        with pytest.raises(ValidationError):
            ExtractConfig(task="sextuple", method="rag", **bad)
    for model, kw in ((EmoOptions, {}), (ExtractConfig, {"task": "sextuple"})):
        with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
            model(method="rag", topk=2, **kw)
    with pytest.raises(ValidationError, match="frozen"):  # options stay frozen (Options'); the config does not
        EmoOptions(method="rag").top_k = 4  # type: ignore[misc]


def test_task_options_reach_the_extraction_config():
    opts = EmoOptions(method="rag", window=12, top_k=5, max_events=3, rag_threshold=0.5)
    assert opts.extract_options() == {"top_k": 5, "max_events": 3}  # rag_threshold is at its default
    cfg = get_task("sextuple").extract_config(opts)
    assert cfg.model_dump() == {"task": "sextuple", "method": "rag", "window": 12, "step": None, "top_k": 5,
                                "rag_threshold": 0.5, "join_threshold": 0.85, "event_context": "asof",
                                "max_events": 3, "max_log_lines": 6, "retries": 2, "max_tokens_cap": 4096}
    assert (cfg.k, cfg.s) == (12, 5)
