"""A YAML task file's mistakes are named with the file, the line and the key (issue 43 point 4): unknown key, wrong
type, missing key, unknown solver or scorer, a column the data does not have, a key given twice. No engine."""

from __future__ import annotations

from pathlib import Path

import pytest

from emocaustics.core.errors import UsageError
from emocaustics.core.task import DatasetOptions, get_task

GOOD = """name: {name}
dataset:
  path: data.jsonl
fields: {{id: qid, target: answer}}
solver:
  name: generate
  prompt: "Capital of {{country}}?"
  max_length: 40
scorer: {{name: exact_match}}
"""
CASES = {  # name: (what changes in GOOD, the line and key the message must name)
    "unknown-key": (("  max_length: 40", "  max_length: 40\n  temprature: 0.5"), "line 9: solver.temprature: "
                                                                                "unknown key"),
    "wrong-type": (("  max_length: 40", "  max_length: many"), "line 8: solver.max_length: Input should be a valid "
                                                                "integer"),
    "missing-key": (('  prompt: "Capital of {country}?"\n', ""), "line 5: solver: missing key 'prompt'"),
    "unknown-solver": (("  name: generate", "  name: summarise"), "line 6: solver.name: unknown solver summarise (the "
                                                                  "core's solvers: generate, multiple_choice)"),
    "unknown-scorer": (("{name: exact_match}", "{name: bleu}"), "line 9: scorer.name: unknown scorer bleu"),
    "no-such-column": (("target: answer", "target: capital"), "line 4: fields.target: column 'capital' is not in"),
    "template-column": (("{country}?", "{nation}?"), "line 7: solver.prompt: column 'nation' is not in"),
    "twice": (("  max_length: 40", "  max_length: 40\n  max_length: 50"), "line 9: key 'max_length' is given twice "
                                                                          "(first on line 8)"),
    "no-source": (("  path: data.jsonl", "  split: test"), "line 2: dataset: give one of path"),
    "hf-without-revision": (("  path: data.jsonl", "  hf: org/data"), "line 2: dataset: hf: org/data: a revision is "
                                                                      "required"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_mistake_names_the_file_line_and_key(case: str, tmp_path: Path) -> None:
    (tmp_path / "data.jsonl").write_text('{"qid": "fr", "country": "France", "answer": "Paris"}\n', encoding="utf-8")
    (old, new), expected = CASES[case]
    text = GOOD.format(name=f"err-{case}")
    assert old in text
    path = tmp_path / "task.yaml"
    path.write_text(text.replace(old, new), encoding="utf-8")
    with pytest.raises(UsageError) as caught:
        get_task(str(path)).load(DatasetOptions(), None)
    message = str(caught.value)
    assert message.startswith(f"{path}: ") and expected in message, message


def test_a_record_without_a_mapped_field_is_named(tmp_path: Path) -> None:
    (tmp_path / "data.jsonl").write_text('{"qid": "fr", "country": "France", "answer": "Paris"}\n'
                                         '{"qid": "jp", "answer": "Tokyo"}\n', encoding="utf-8")
    (tmp_path / "task.yaml").write_text(GOOD.format(name="err-record"), encoding="utf-8")
    with pytest.raises(UsageError, match=r"data.jsonl: line 2: no field 'country' \(its fields: answer, qid\)"):
        get_task(str(tmp_path / "task.yaml")).load(DatasetOptions(), None)


def test_a_pinned_hash_that_differs_is_named(tmp_path: Path) -> None:
    (tmp_path / "data.jsonl").write_text('{"qid": "fr", "country": "France", "answer": "Paris"}\n', encoding="utf-8")
    text = GOOD.format(name="err-hash").replace("  path: data.jsonl", "  path: data.jsonl\n  sha256: " + "ab" * 32)
    (tmp_path / "task.yaml").write_text(text, encoding="utf-8")
    with pytest.raises(UsageError, match=r"line 4: dataset.sha256: .*data.jsonl has sha256 [0-9a-f]{64}, not the one "
                                         "pinned"):
        get_task(str(tmp_path / "task.yaml")).load(DatasetOptions(), None)


def test_a_prompt_field_that_fields_input_leaves_out_is_named(tmp_path: Path) -> None:
    (tmp_path / "data.jsonl").write_text('{"qid": "fr", "country": "France", "city": "x", "answer": "Paris"}\n',
                                         encoding="utf-8")
    text = GOOD.format(name="err-input").replace("target: answer}", "target: answer, input: [city]}")
    (tmp_path / "task.yaml").write_text(text, encoding="utf-8")
    with pytest.raises(UsageError, match=r"line 7: solver.prompt: the solver needs 'country', which fields.input "
                                         r"leaves out \(it gives city\)"):
        get_task(str(tmp_path / "task.yaml")).load(DatasetOptions(), None)


@pytest.mark.parametrize("line, said", [('{"question": "2+2", "answ', "line 3: not JSON (Unterminated string"),
                                        ('["2+2", "4"]', "line 3: a record is a JSON object, not list")])
def test_a_bad_line_of_a_local_jsonl_file_is_named_by_file_and_line(tmp_path, line, said):
    """A YAML task's local JSON-lines rows (`read_local`): a line that is not JSON or not an object is one usage error
    naming the file and the line; blank lines are passed over."""
    from emocaustics.core.errors import UsageError
    from emocaustics.tasks.yamltask.data import read_local

    path = tmp_path / "rows.jsonl"
    path.write_text('{"question": "1+1", "answer": "2"}\n\n' + line + "\n", encoding="utf-8")
    with pytest.raises(UsageError) as got:
        read_local(path, None)
    assert str(got.value).startswith(f"{path}: {said}"), str(got.value)
    path.write_text('{"question": "1+1", "answer": "2"}\n\n', encoding="utf-8")
    assert read_local(path, None) == [{"__where": "line 1", "question": "1+1", "answer": "2"}]
