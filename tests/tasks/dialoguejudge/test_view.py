"""The viewer's page of one judged conversation (issue 56 item 6): the worker's and the judge's ratings side by side,
through the task's own `Report.view_sample` as `emocaustics view` calls it (no Ray, no run folder)."""

from emocaustics.core.task import get_task
from emocaustics.view.data import task_sections

HUMAN = {"robotic": 88.0, "interesting": 80.0, "fun": 68.0}
CONVERSATION = {"topic": "Beginning: Love(like)", "turns": [{"round": 1, "user": "Hey", "bot": "kon nichiwa !"},
                                                             {"round": 2, "user": "Fine", "bot": "lovely ."}]}


def _sections(prediction):
    return task_sections({"task": "dialogue-judge", "input": CONVERSATION, "target": HUMAN, "prediction": prediction,
                          "items": []})


def test_one_answer_side_by_side_with_the_worker_and_its_reason():
    got = _sections({"ratings": {"robotic": 40, "interesting": 75, "fun": 70}, "reason": "stilted greetings"})
    assert got[0]["kind"] == "text" and "User: Hey\nChatbot: kon nichiwa !" in got[0]["text"]
    assert got[0]["text"].startswith("Topic: Beginning: Love(like)\n\nConversation:\nUser: Hey")
    table = got[1]
    assert table["columns"] == ["criterion", "worker", "judge"]
    assert table["rows"] == [["robotic", 88.0, 40.0], ["interesting", 80.0, 75.0], ["fun", 68.0, 70.0]]
    assert got[2] == {"title": "judge: reason", "kind": "text", "text": "stilted greetings"}
    assert get_task("dialogue-judge").report.view_sample is not None


def test_epochs_one_column_each_and_an_unscored_epoch_said_not_zeroed():
    got = _sections({"epochs": [{"ratings": {"robotic": 10, "interesting": 20, "fun": 30}},
                                {"failed": "HTTP 500 from the endpoint"},
                                {"ratings": {"robotic": 10, "interesting": "lots", "fun": 30}}]})
    table = got[1]
    assert table["columns"] == ["criterion", "worker", "judge, epoch 1", "judge, epoch 2", "judge, epoch 3"]
    assert table["rows"][0] == ["robotic", 88.0, 10.0, None, None]  # an unscored epoch shows no number, not 0
    said = {s["title"]: s["text"] for s in got[2:]}
    assert said["judge, epoch 2: unscored"] == "failed: HTTP 500 from the endpoint"
    assert said["judge, epoch 3: unscored"].startswith("unreadable answer: ('interesting',)")
