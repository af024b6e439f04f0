"""The decisions of the viewer across runs (`emocaustics view RUN_A RUN_B ...`, report/across.py) without a browser:
which configs of which runs form a group (the same label, `--pair` mappings, a config in one run only), the index
page's data (runs, folders, models, groups, counts), a group's table (one cell per run: score, status, reason; a
failed sample counts 0 as in `compare`; a sample one run lacks; whether the answers differ), a sample's page (every
run's sample side by side, None where a run lacks it), and the one-line errors (not a run folder, an unfinished run,
no config paired, no sample shared).

Real run folders of calibration-only jobs of the test task `count` (tests/runs/count_task.py: no model, no Ray, no
endpoint), built once for the module in about a second each:
    A  12 samples (s0..s11), configs count_right and count_half
    B   8 samples (s0..s7), configs count_wrong and count_half
    B2  a copy of B in another folder, `b 2/` (a third run; a space in a run's name)
    C   3 samples with A's ids but other numbers (offset 1): nothing pairs with A
`half` fails every even sample ("predict: no answer", score 0) and answers the odd ones right; `right` answers every
sample right, `wrong` every one wrong. A calibration config records no model, so the fixture writes the spec a run
would have recorded into provenance.json / configs.json (A's count_half: its provenance says `openai:model-a@host`,
its configs.json record something else; B's count_half: only its configs.json says `openai:model-b@host`), and
edits two eval-log reasons (B's count_half s0: the eval log has none, the scores table has it; A's count_half s2: the
eval log words it otherwise) so that which source wins is visible.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
from pathlib import Path

import polars as pl
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "runs"))

from count_task import CountTask, write_job  # noqa: E402

from emocaustics.core.errors import UsageError  # noqa: E402
from emocaustics.core.task import register, unregister  # noqa: E402
from emocaustics.report.across import Across, _check_run  # noqa: E402
from emocaustics.view.data import task_sections  # noqa: E402

JOB = """
name: {name}
dataset: {{n: {n}, offset: {offset}}}
runs:
{runs}
scoring: {{embedder: minilm}}
"""
STAMP = "20260101-000000"
MODEL_A, MODEL_B, MODEL_A_RIGHT = "openai:model-a@host", "openai:model-b@host", "openai:model-a-right@host"
LOG_REASON = "predict: no answer (as the eval log words it)"
FAILED = "predict: no answer"


def _run(tmp: Path, name: str, n: int, methods: list[str], offset: int = 0) -> Path:
    from emocaustics.cli import main

    runs = "\n".join(f"  - {{task: count, method: {m}}}" for m in methods)
    job = write_job(tmp / f"{name}.yaml", JOB.format(name=name, n=n, offset=offset, runs=runs))
    out = tmp / "runs" / name / STAMP
    assert main(["run", str(job), "--out", str(out), "--allow-failures"]) == 0
    return out


def _edit_json(path: Path, change) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data), encoding="utf-8")


def _set_record_model(run: Path, label: str, model: str | None) -> None:
    _edit_json(run / "configs.json", lambda recs: [r.update(model=model) for r in recs if r["run"] == label])


def _set_logged(run: Path, label: str, sid: str, column: str, text: str | None) -> None:
    """A sample's `reason` or `prediction` (its JSON text) as the run's eval log holds it."""
    path = run / "evallog" / "samples" / f"{label}.parquet"
    frame = pl.read_parquet(path)
    frame.with_columns(pl.when(pl.col("sample_id") == sid).then(pl.lit(text, pl.Utf8)).otherwise(pl.col(column))
                       .alias(column)).write_parquet(path)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("across")
    if "__mutmut_" not in os.environ.get("MUTANT_UNDER_TEST", ""):
        return _build(tmp)
    # Under mutmut (`make mutation`: a fresh process per mutant) the runs are built once, with no mutant on (the
    # trampolines read MUTANT_UNDER_TEST on every call; "" is the original code), kept beside mutmut's own state in
    # mutants/, and copied for each mutant: what is tested is reading them (report/across.py), not writing them.
    sources = hashlib.sha256(b"".join(p.read_bytes() for p in sorted(Path("emocaustics").rglob("*.py"))))
    kept = Path(f"across-decisions-runs-{sources.hexdigest()[:12]}").resolve()  # rebuilt when the package changes
    if not kept.is_dir():
        mutant, os.environ["MUTANT_UNDER_TEST"] = os.environ["MUTANT_UNDER_TEST"], ""
        try:
            built = _build(tmp_path_factory.mktemp("build"))
        finally:
            os.environ["MUTANT_UNDER_TEST"] = mutant
        staged = kept.with_name(f"{kept.name}.{os.getpid()}")
        shutil.copytree(built["a"].parents[1], staged)  # the runs/ folder
        try:
            staged.rename(kept)  # atomic: a sibling process that built them too keeps its own copy
        except OSError:
            shutil.rmtree(staged, ignore_errors=True)
    shutil.copytree(kept, tmp / "runs")
    return {name: tmp / "runs" / folder / STAMP for name, folder in (("a", "a"), ("b", "b"), ("b2", "b 2"),
                                                                     ("c", "c"))}


def _build(tmp: Path) -> dict[str, Path]:
    mp = pytest.MonkeyPatch()
    mp.setenv("EMOCAUSTICS_CACHE", str(tmp / "cache"))
    mp.setenv("EMOCAUSTICS_RESPONSE_CACHE", str(tmp / "responses"))
    task = register(CountTask())
    try:
        a = _run(tmp, "a", 12, ["right", "half"])
        b = _run(tmp, "b", 8, ["wrong", "half"])
        c = _run(tmp, "c", 3, ["right"], offset=1)
    finally:
        unregister(task.name)
        mp.undo()
    _edit_json(a / "predictions" / "count_half" / "provenance.json", lambda p: p.update(model=MODEL_A))
    _set_record_model(a, "count_half", "a record's model (the provenance wins)")
    _edit_json(a / "predictions" / "count_right" / "provenance.json", lambda p: p.update(model=MODEL_A_RIGHT))
    _set_record_model(b, "count_half", MODEL_B)
    _set_logged(b, "count_half", "s0", "reason", None)
    _set_logged(a, "count_half", "s2", "reason", LOG_REASON)
    b2 = tmp / "runs" / "b 2" / STAMP  # a run name with a space: keys split on the tab alone
    shutil.copytree(b, b2)
    return {"a": a, "b": b, "b2": b2, "c": c}


def _name(run: Path) -> str:
    return f"{run.parent.name}/{run.name}"


def _key(run: Path, label: str) -> str:
    return f"{_name(run)}\t{label}"


def _prediction(method: str, i: int) -> bool | None:
    even = i % 2 == 0
    return {"right": even, "wrong": not even, "half": None if even else even}[method]


def _cell(method: str, i: int) -> dict:
    """What a group's table says of sample s<i> of a config (a failure scores 0, as in compare)."""
    if method == "half" and i % 2 == 0:
        return {"score": 0.0, "failed": True, "status": "failed", "reason": FAILED}
    return {"score": 0.0 if method == "wrong" else 1.0, "failed": False, "status": "ok", "reason": None}


def _items(run: Path) -> dict[str, str]:
    """What pairs a sample across runs: its id and the fingerprints of its input and its gold the run recorded."""
    rec = json.loads((run / "predictions" / "count_half" / "provenance.json").read_text(encoding="utf-8"))
    return {sid: f"{sid}#{fp}#{rec['gold'][sid]}" for sid, fp in rec["samples"].items()}


def _rows(runs: dict[str, Path], members: list[tuple[str, str]]) -> list[dict]:
    """The expected rows of a group whose members are (run, method): every sample any member has, s0..s11 in
    natural order, None where the run lacks it; answers differ where two present members predicted otherwise."""
    items = _items(runs["a"])
    size = {"a": 12, "b": 8, "b2": 8}
    rows = []
    for i in range(12):
        present = [(r, m) for r, m in members if i < size[r]]
        if not present:
            continue
        rows.append({"sample_id": f"s{i}", "item": items[f"s{i}"],
                     "answers_differ": len({_prediction(m, i) for _, m in present}) > 1,
                     "cells": [_cell(m, i) if i < size[r] else None for r, m in members]})
    return rows


def _member(runs: dict[str, Path], run: str, label: str, model: str | None) -> dict:
    return {"run": _name(runs[run]), "label": label, "path": str(runs[run]), "model": model,
            "method": label.removeprefix("count_"), "task": "count"}


# -- which folders are runs ----------------------------------------------------------------------------------------
def test_a_folder_that_is_not_a_finished_run_is_one_line_naming_it(runs, tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    usage = "give run folders that `emocaustics run` or `eval` wrote"
    with pytest.raises(UsageError) as got:
        Across([runs["a"], missing])
    assert str(got.value) == f"{missing}: no such folder ({usage})"
    a_file = tmp_path / "file"
    a_file.write_text("x")
    with pytest.raises(UsageError, match="no such folder"):
        _check_run(a_file)
    for lacks, make in [("scores.parquet and no evallog", []), ("scores.parquet", ["evallog"]),
                        ("evallog", ["scores.parquet"])]:
        folder = tmp_path / lacks.replace(" ", "_")
        folder.mkdir()
        for name in make:
            (folder / name).mkdir()
        with pytest.raises(UsageError) as got:
            Across([runs["a"], folder])
        assert str(got.value) == f"{folder} is not a finished run folder (no {lacks}); {usage}", lacks
    _check_run(runs["a"])  # a finished run passes


def test_runs_with_no_config_paired_are_one_line_naming_each_runs_configs(runs) -> None:
    with pytest.raises(UsageError) as got:
        Across([runs["b"], runs["c"]])  # B: wrong, half; C: right
    assert str(got.value) == ("no config of one run has a partner in another (the same label, or one that --pair "
                              f"LABEL_A LABEL_B names): {runs['b']}: count_wrong, count_half; "
                              f"{runs['c']}: count_right")


def test_runs_that_share_no_sample_are_one_line_naming_the_folders(runs) -> None:
    # count_right pairs by label, but C's s0..s2 are other numbers than A's: no sample is in both
    with pytest.raises(UsageError) as got:
        Across([runs["a"], runs["c"]])
    assert str(got.value) == (f"the runs {runs['a']}, {runs['c']} share no sample (by task and sample id, and "
                              "content where the runs recorded it): nothing to show side by side")


# -- groups --------------------------------------------------------------------------------------------------------
def test_configs_of_the_same_label_form_a_group_and_one_in_a_single_run_none(runs) -> None:
    a, b = runs["a"], runs["b"]
    across = Across([a, b])
    assert across.names == [_name(a), _name(b)] and across.dirs == [a, b]
    assert across.groups == [[_key(a, "count_half"), _key(b, "count_half")]] and across.count() == 1
    assert across.group_of(_name(a), "count_half") == 0 and across.group_of(_name(b), "count_half") == 0
    assert across.group_of(_name(a), "count_right") is None  # only A has it
    assert across.group_of(_name(b), "count_wrong") is None
    assert across.group_of(_name(a), "count_wrong") is None and across.group_of("a", "count_half") is None
    assert Across.list_prefix == "x" and Across.sample_prefix == "x"


def test_pair_mappings_group_the_configs_they_name(runs) -> None:
    a, b = runs["a"], runs["b"]
    across = Across([a, b], pairs=[("count_right", "count_wrong"), ("count_half", "count_half")])
    assert across.groups == [[_key(a, "count_right"), _key(b, "count_wrong")],
                             [_key(a, "count_half"), _key(b, "count_half")]]
    assert across.count() == 2
    assert across.group_of(_name(a), "count_right") == 0 and across.group_of(_name(b), "count_wrong") == 0
    assert across.group_of(_name(a), "count_half") == 1 and across.group_of(_name(b), "count_half") == 1
    # one label paired with two: one group, its members in the runs' config order (not the order of the pairs)
    across = Across([a, b], pairs=[("count_right", "count_half"), ("count_right", "count_wrong")])
    assert across.groups == [[_key(a, "count_right"), _key(b, "count_wrong"), _key(b, "count_half")]]
    assert across.group_of(_name(a), "count_half") is None and across.group_of(_name(b), "count_half") == 0


def test_three_runs_of_one_label_are_one_group_of_three(runs) -> None:
    a, b, b2 = runs["a"], runs["b"], runs["b2"]
    across = Across([a, b, b2])
    assert across.groups == [[_key(a, "count_half"), _key(b, "count_half"), _key(b2, "count_half")],
                             [_key(b, "count_wrong"), _key(b2, "count_wrong")]]  # two of the three runs have it
    index = across.index()
    assert index["run"] == "3 runs"
    assert [(g["samples"], g["shared"]) for g in index["groups"]] == [(12, 8), (8, 8)]
    assert across.table(0)["rows"] == _rows(runs, [("a", "half"), ("b", "half"), ("b2", "half")])
    assert across.table(1)["rows"] == _rows(runs, [("b", "wrong"), ("b2", "wrong")])
    assert [r["models"] for r in index["runs"]] == [[MODEL_A], [MODEL_B], [MODEL_B]]
    assert [(m["run"], m["label"]) for m in index["groups"][1]["members"]] == [(_name(b), "count_wrong"),
                                                                               (_name(b2), "count_wrong")]
    page = across.sample(0, 9)  # only A has s9: the two B runs' columns are empty, each in its place
    assert page["sample_id"] == "s9" and len(page["samples"]) == 3
    assert page["samples"][0]["sample_id"] == "s9" and page["samples"][1:] == [None, None]
    page = across.sample(1, 0)
    got = [(s["config"], s["sample_id"], s["prediction"]) for s in page["samples"]]
    assert got == [("count_wrong", "s0", False)] * 2


# -- the index page ------------------------------------------------------------------------------------------------
def test_index_lists_the_runs_their_models_and_the_groups(runs) -> None:
    a, b = runs["a"], runs["b"]
    across = Across([a, b])
    half_a = _member(runs, "a", "count_half", MODEL_A)  # the provenance's model, not the record's
    half_b = _member(runs, "b", "count_half", MODEL_B)  # no model in the provenance: the record's
    # A's count_right has a model too, but is in no group: not listed
    assert across.index() == {
        "across": True, "run": "2 runs",
        "runs": [{"name": _name(a), "path": str(a), "models": [MODEL_A]},
                 {"name": _name(b), "path": str(b), "models": [MODEL_B]}],
        "groups": [{"g": 0, "task": "count", "members": [half_a, half_b], "samples": 12, "shared": 8}]}
    across = Across([a, b], pairs=[("count_right", "count_wrong"), ("count_half", "count_half")])
    index = across.index()
    assert index["runs"] == [{"name": _name(a), "path": str(a), "models": [MODEL_A_RIGHT, MODEL_A]},
                             {"name": _name(b), "path": str(b), "models": [MODEL_B]}]
    assert [(g["g"], g["task"], g["members"], g["samples"], g["shared"]) for g in index["groups"]] == [
        (0, "count", [_member(runs, "a", "count_right", MODEL_A_RIGHT), _member(runs, "b", "count_wrong", None)],
         12, 8),
        (1, "count", [half_a, half_b], 12, 8)]


def test_a_members_model_is_the_provenances_else_the_records(runs, tmp_path: Path) -> None:
    a = tmp_path / "runs" / "a" / STAMP
    shutil.copytree(runs["a"], a)
    across = Across([a, runs["b"]])
    key = _key(a, "count_half")
    assert across.member(key) is across.member(key)  # read once
    assert across.member(key)["model"] == MODEL_A
    prov = a / "predictions" / "count_half" / "provenance.json"
    prov.write_text("{not json")  # unreadable: the record's model
    assert across._member(key) == {"run": _name(a), "label": "count_half", "path": str(a),
                                   "model": "a record's model (the provenance wins)", "method": "half",
                                   "task": "count"}
    prov.unlink()  # none: the record's model
    assert across._member(key)["model"] == "a record's model (the provenance wins)"
    assert across._member(_key(runs["b"], "count_half"))["model"] == MODEL_B
    # a run whose configs.json has no record of the config: the provenance's model, no method or task
    a2 = tmp_path / "runs" / "a2" / STAMP
    shutil.copytree(runs["a"], a2)
    _edit_json(a2 / "configs.json", lambda recs: recs.remove(next(r for r in recs if r["run"] == "count_half")))
    got = Across([a2, runs["b"]]).member(_key(a2, "count_half"))
    assert got == {"run": _name(a2), "label": "count_half", "path": str(a2), "model": MODEL_A, "method": None,
                   "task": None}


# -- a group's table -----------------------------------------------------------------------------------------------
def test_a_groups_table_has_one_cell_per_run_and_none_where_a_run_lacks_the_sample(runs) -> None:
    a, b = runs["a"], runs["b"]
    across = Across([a, b], pairs=[("count_right", "count_wrong"), ("count_half", "count_half")])
    right_wrong = across.table(0)
    assert right_wrong == {"g": 0, "task": "count", "members": [_member(runs, "a", "count_right", MODEL_A_RIGHT),
                                                                _member(runs, "b", "count_wrong", None)],
                           "rows": _rows(runs, [("a", "right"), ("b", "wrong")])}
    assert across.table(0) is right_wrong  # computed once
    # s0..s7: both runs answered, differently; s8..s11: only A has them
    assert [r["answers_differ"] for r in right_wrong["rows"]] == [True] * 8 + [False] * 4
    assert [r["cells"][1] is None for r in right_wrong["rows"]] == [False] * 8 + [True] * 4
    half = across.table(1)
    assert half["g"] == 1 and half["rows"] == _rows(runs, [("a", "half"), ("b", "half")])
    # a failure scores 0 and says why; the same answers (none, or the same) do not differ
    assert half["rows"][0]["cells"] == [{"score": 0.0, "failed": True, "status": "failed", "reason": FAILED}] * 2
    assert half["rows"][1]["cells"] == [{"score": 1.0, "failed": False, "status": "ok", "reason": None}] * 2
    assert not any(r["answers_differ"] for r in half["rows"])


def test_one_run_failing_a_sample_another_answers(runs) -> None:
    a, b = runs["a"], runs["b"]
    across = Across([a, b], pairs={"count_half": "count_wrong"})
    rows = across.table(0)["rows"]
    assert rows == _rows(runs, [("a", "half"), ("b", "wrong")])
    assert rows[0]["cells"] == [{"score": 0.0, "failed": True, "status": "failed", "reason": FAILED},
                                {"score": 0.0, "failed": False, "status": "ok", "reason": None}]
    assert rows[0]["answers_differ"]  # no answer against an answer


def test_answers_differ_by_their_json_not_by_how_it_was_written(runs, tmp_path: Path) -> None:
    a, b = tmp_path / "runs" / "a" / STAMP, tmp_path / "runs" / "b" / STAMP
    shutil.copytree(runs["a"], a)
    shutil.copytree(runs["b"], b)
    # s1: the same answer with its keys in another order (and a non-ASCII string); s3: another answer
    _set_logged(a, "count_half", "s1", "prediction", '{"answer": false, "why": "\u00e9tude"}')
    _set_logged(b, "count_half", "s1", "prediction", '{"why": "étude", "answer": false}')
    _set_logged(a, "count_half", "s3", "prediction", '{"answer": false}')
    _set_logged(b, "count_half", "s3", "prediction", '{"answer": true}')
    rows = Across([a, b]).table(0)["rows"]
    assert [r["answers_differ"] for r in rows[:4]] == [False, False, False, True]


# -- a sample's page -----------------------------------------------------------------------------------------------
def test_a_samples_page_shows_it_in_every_run_side_by_side(runs) -> None:
    a, b = runs["a"], runs["b"]
    across = Across([a, b])
    members = [_member(runs, "a", "count_half", MODEL_A), _member(runs, "b", "count_half", MODEL_B)]
    page = across.sample(0, 0)
    assert [page["g"], page["k"], page["sample_id"], page["members"]] == [0, 0, "s0", members]
    left, right = page["samples"]
    for got in (left, right):
        assert (got["config"], got["sample_id"], got["input"], got["target"], got["prediction"], got["status"]) == (
            "count_half", "s0", {"number": 0}, True, None, "failed")
        assert got["sections"] == task_sections({k: v for k, v in got.items() if k != "sections"})
        assert [s["title"] for s in got["sections"]] == ["Input", "Gold", "Prediction"]
    assert left["reason"] == FAILED
    assert right["reason"] == FAILED  # B's eval log has no reason for it: the scores table's
    assert across.sample(0, 2)["samples"][0]["reason"] == LOG_REASON  # the eval log's own words come first
    page = across.sample(0, 3)
    assert page["sample_id"] == "s3" and [s["prediction"] for s in page["samples"]] == [False, False]
    assert [s["reason"] for s in page["samples"]] == [None, None] and [s["status"] for s in page["samples"]] == [
        "ok", "ok"]
    page = across.sample(0, 10)  # natural order: s10 after s9; B lacks it
    assert page["sample_id"] == "s10" and page["samples"][1] is None
    assert page["samples"][0]["sample_id"] == "s10" and page["samples"][0]["prediction"] is None


def test_a_paired_samples_page_shows_each_members_own_config(runs) -> None:
    a, b = runs["a"], runs["b"]
    across = Across([a, b], pairs=[("count_right", "count_wrong"), ("count_half", "count_half")])
    page = across.sample(0, 4)
    assert page["g"] == 0 and page["k"] == 4 and page["sample_id"] == "s4"
    assert [(s["config"], s["prediction"]) for s in page["samples"]] == [("count_right", True),
                                                                         ("count_wrong", False)]
    assert across.sample(1, 4)["samples"][0]["config"] == "count_half"
