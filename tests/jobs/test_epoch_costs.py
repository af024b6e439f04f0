"""A voted config's per-sample cost: each sample's numeric stats summed over its epochs (jobs/epochs.py `_summed`)."""

from emocaustics.jobs.epochs import _summed


def test_each_samples_numbers_are_summed_over_the_epochs_and_the_rest_left_out() -> None:
    epochs = [{"a": {"llm_calls": 2, "seconds": 0.5, "ok": True, "model": "m"}, "b": {"llm_calls": 1}},
              {"a": {"llm_calls": 3, "seconds": 0.25, "ok": False}, "c": {"prompt_tokens": 0}}]
    got = _summed(epochs)
    assert got == {"a": {"llm_calls": 5, "seconds": 0.75}, "b": {"llm_calls": 1}, "c": {"prompt_tokens": 0}}
    assert isinstance(got["a"]["llm_calls"], int)
    assert _summed([]) == {}
