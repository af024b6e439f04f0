"""Issue 53 finding 13: a YAML task's prompt fields are checked when the task loads, not when each sample is solved:
the id or the target column in the template is one line naming the task file, the line and the key; a null field the
prompt shows (or a null id) is refused naming the data file, the record and the field, never rendered as "None"."""

from __future__ import annotations

from pathlib import Path

import pytest

from emocaustics.core.errors import UsageError
from emocaustics.core.task import DatasetOptions, get_task

TASK = """name: {name}
dataset:
  path: data.{suffix}
fields: {{id: qid, target: answer}}
solver:
  name: generate
  prompt: "{prompt}"
scorer: {{name: exact_match}}
"""
ROW = '{"qid": "fr", "country": "France", "answer": "Paris"}\n'


def _load(tmp_path: Path, name: str, prompt: str, rows: str = ROW, suffix: str = "jsonl"):
    (tmp_path / f"data.{suffix}").write_text(rows, encoding="utf-8")
    path = tmp_path / f"{name}.yaml"
    path.write_text(TASK.format(name=name, prompt=prompt, suffix=suffix), encoding="utf-8")
    return path, get_task(str(path)).load(DatasetOptions(), None)


@pytest.mark.parametrize(("prompt", "said"), [
    ("Capital of {country} ({qid})?", "solver.prompt: the solver needs 'qid', the id column (fields.id), no input: "
                                      "write {id} for the sample's id"),
    ("Is {answer} the capital of {country}?", "solver.prompt: the solver needs 'answer', the target column"),
])
def test_the_id_or_target_column_in_the_template_is_a_load_error(tmp_path, prompt, said):
    with pytest.raises(UsageError) as caught:
        _load(tmp_path, "idcol", prompt)
    message = str(caught.value)
    assert message.startswith(f"{tmp_path / 'idcol.yaml'}: line 7: ") and said in message, message
    assert "\n" not in message


def test_the_sample_id_itself_is_fine(tmp_path):
    _, loaded = _load(tmp_path, "idok", "Capital of {country} ({id})?")
    assert [s.id for s in loaded.samples] == ["fr"] and loaded.samples[0].input == {"country": "France"}


@pytest.mark.parametrize(("rows", "suffix", "record", "field"), [
    (ROW + '{"qid": "jp", "country": null, "answer": "Tokyo"}\n', "jsonl", "line 2", "country"),
    ("qid,country,answer\nfr,France,Paris\njp,,Tokyo\n", "csv", "row 2", "country"),
    (ROW + '{"qid": null, "country": "Japan", "answer": "Tokyo"}\n', "jsonl", "line 2", "qid"),
])
def test_a_null_the_prompt_or_the_id_needs_is_refused_by_record_and_field(tmp_path, rows, suffix, record, field):
    with pytest.raises(UsageError) as caught:
        _load(tmp_path, "nulls", "Capital of {country}?", rows, suffix)
    assert str(caught.value).startswith(f"{tmp_path / f'data.{suffix}'}: {record}: field {field!r} is null")


def test_a_null_the_prompt_does_not_show_is_kept(tmp_path):
    rows = '{"qid": "fr", "country": "France", "note": null, "answer": "Paris"}\n'
    _, loaded = _load(tmp_path, "quiet", "Capital of {country}?", rows)
    assert loaded.samples[0].input == {"country": "France", "note": None}
