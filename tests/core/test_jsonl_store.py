"""The default prediction store (`core.contract.JsonlStore`): a prediction and a failure row round-trip, the latest
row of a sample wins, and a damaged line of either file is one error naming the file and the line."""

from __future__ import annotations

import pytest

from emocaustics.core.errors import UsageError
from emocaustics.core.task import Failure, JsonlStore


def test_predictions_and_failures_round_trip_the_prediction_winning(tmp_path):
    store = JsonlStore()
    store.write_prediction(tmp_path, "a", {"x": (1, 2)})
    store.write_prediction(tmp_path, "b", Failure("pass1", "bad answer"))
    store.write_prediction(tmp_path, "c", Failure("pass1", "timeout"))
    store.write_prediction(tmp_path, "c", "fixed on resume")
    assert store.read_predictions(tmp_path) == {"a": {"x": [1, 2]}, "b": Failure("pass1", "bad answer"),
                                                "c": "fixed on resume"}


@pytest.mark.parametrize("name", ["predictions.jsonl", "failures.jsonl"])
def test_a_damaged_line_of_either_file_names_the_file_and_line(tmp_path, name):
    JsonlStore().write_prediction(tmp_path, "a", Failure("s", "r") if name == "failures.jsonl" else 1)
    with (tmp_path / name).open("a", encoding="utf-8") as f:
        f.write('{"id": "b", "step": \n')  # a line cut short
    with pytest.raises(UsageError, match=rf"{name}: line 2: not a"):
        JsonlStore().read_predictions(tmp_path)
