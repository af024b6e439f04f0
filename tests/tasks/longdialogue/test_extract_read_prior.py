"""`extract.output.read_prior`: each dialogue's sextuple prediction in a previous run's folder, or why not."""

from emocaustics.core.task import Failure
from emocaustics.tasks.longdialogue.extract.output import read_prior


def test_records_or_a_failure_naming_the_file(tmp_path):
    (tmp_path / "output_chat_1.json").write_text('[{"holder": "A"}]', encoding="utf-8")
    (tmp_path / "chat_2.json").write_text('[{"holder": "B"}]', encoding="utf-8")
    (tmp_path / "output_chat_3.json").write_text("[{", encoding="utf-8")
    (tmp_path / "output_chat_4.json").write_text('{"holder": "A"}', encoding="utf-8")
    (tmp_path / "output_chat_5.json").write_bytes(b'["\xff"]')
    found = read_prior(tmp_path, [1, 2, 3, 4, 5, 6])
    assert list(found) == ["1", "2", "3", "4", "5", "6"]
    assert found["1"] == [{"holder": "A"}] and found["2"] == [{"holder": "B"}]
    for d, words in [("3", "unreadable"), ("4", "must be a list of records"), ("5", "unreadable"),
                     ("6", "no sextuple prediction (output_)chat_6.json")]:
        assert isinstance(found[d], Failure) and found[d].step == "input" and words in found[d].reason, found[d]
    assert str(tmp_path / "output_chat_3.json") in found["3"].reason
