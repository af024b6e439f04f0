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
