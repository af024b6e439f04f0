"""The cost area's decisions (issue 44, `make mutation AREA=cost`): what is counted per call, what a config costs,
and when the budget stops a run; each test pins a decision a mutant of jobs/cost.py or models/{budget,prices,usage}.py
changed without any other test failing."""

from __future__ import annotations

from emocaustics.models.base import Completion
from emocaustics.models.usage import Usage


def test_usage_counts_calls_errors_and_tokens_of_each_completion():
    u = Usage()
    u.count([Completion("a", prompt_tokens=3, generated_tokens=5), Completion("", error="boom", prompt_tokens=2)])
    assert u.as_dict() == {"calls": 2, "errors": 1, "prompt_tokens": 5, "generated_tokens": 5,
                           "cached_prompt_tokens": 0, "cache_hits": 0, "cache_misses": 0}


def test_usage_adds_another_usage_or_a_dict_and_ignores_unknown_keys():
    u = Usage(calls=1, cache_hits=2)
    u.add(Usage(calls=2, cache_misses=4, cached_prompt_tokens=7))
    u.add({"errors": "3", "nonsense": 9})
    assert u.as_dict() == {"calls": 3, "errors": 3, "prompt_tokens": 0, "generated_tokens": 0,
                           "cached_prompt_tokens": 7, "cache_hits": 2, "cache_misses": 4}
