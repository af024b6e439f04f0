"""view.data.task_sections: a sample of no task, or of a task not installed here, gets the generic sections."""

from emocaustics.view.data import generic_sections, task_sections


def test_no_task_and_an_unknown_task_get_the_generic_view():
    for task in (None, "", "no-such-plugin-task"):
        sample = {"task": task, "input": {"a": 1}, "target": [2], "prediction": "p", "items": []}
        assert task_sections(sample) == generic_sections(sample)
        assert [s["title"] for s in task_sections(sample)] == ["Input", "Gold", "Prediction"]
