# tests/mutation_recheck.py (make mutation): its pure parts on a fake mutants/ tree, and one whole recheck of a fake
# mutated package (no mutmut run, no Ray, no engine): a killed, a surviving and an endless mutant.
import importlib.util
import json
import os
import textwrap
import threading
import time
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location("mutation_recheck", Path(__file__).with_name("mutation_recheck.py"))
recheck = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(recheck)

PYPROJECT = """
[project]
name = "x"

[tool.mutmut]
source_paths = ["emocaustics"]
pytest_add_cli_args = ["-p", "no:cacheprovider", "-m", "not engine"]
pytest_add_cli_args_test_selection = ["tests/test_a.py", "tests/test_b.py"]
"""


def _meta(path: Path, codes: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"exit_code_by_key": codes, "hash_by_function_name": {"f": "abc"},
                                "type_check_error_by_key": {}, "durations_by_key": {k: 9.0 for k in codes},
                                "estimated_durations_by_key": {}}, indent=4))
    return path


def test_pytest_arguments_come_from_tool_mutmut():
    assert recheck.pytest_config(PYPROJECT) == (["-p", "no:cacheprovider", "-m", "not engine"],
                                                ["tests/test_a.py", "tests/test_b.py"])
    assert recheck.pytest_config("[project]\nname = 'x'\n") == ([], [])


def test_the_project_pyproject_gives_the_selection_it_lists():
    add, selection = recheck.pytest_config(Path(__file__).parents[1].joinpath("pyproject.toml").read_text())
    assert add[:2] == ["-p", "no:cacheprovider"]
    assert "tests/tasks/ecpe/test_ecpe_official.py" in selection


def test_only_timeouts_matching_the_globs_are_found_unless_more_statuses_are_asked(tmp_path):
    a = _meta(tmp_path / "emocaustics/a.py.meta", {"emocaustics.a.f__mutmut_1": 24, "emocaustics.a.f__mutmut_2": 1,
                                                   "emocaustics.a.f__mutmut_3": -24, "emocaustics.a.f__mutmut_4": 0,
                                                   "emocaustics.a.f__mutmut_5": None, "emocaustics.a.f__mutmut_6": 35})
    b = _meta(tmp_path / "emocaustics/sub/b.py.meta", {"emocaustics.sub.b.g__mutmut_1": 36,
                                                       "emocaustics.sub.b.g__mutmut_2": 33})
    assert recheck.mutants_to_recheck(tmp_path, [], {"timeout"}) == [
        (a, "emocaustics.a.f__mutmut_1"), (a, "emocaustics.a.f__mutmut_3"), (b, "emocaustics.sub.b.g__mutmut_1")]
    assert recheck.mutants_to_recheck(tmp_path, ["emocaustics.sub*"], {"timeout"}) == [
        (b, "emocaustics.sub.b.g__mutmut_1")]
    assert recheck.mutants_to_recheck(tmp_path, ["emocaustics.a*"], {"timeout", "not checked", "suspicious"}) == [
        (a, "emocaustics.a.f__mutmut_1"), (a, "emocaustics.a.f__mutmut_3"), (a, "emocaustics.a.f__mutmut_5"),
        (a, "emocaustics.a.f__mutmut_6")]


def test_a_mutant_runs_the_tests_that_cover_its_function_else_the_selection(tmp_path):
    (tmp_path / "mutmut-stats.json").write_text(json.dumps(
        {"tests_by_mangled_function_name": {"emocaustics.a.f": ["tests/test_b.py::t2", "tests/test_a.py::t1"]}}))
    covering = recheck.covering_tests(tmp_path)
    assert recheck.tests_for("emocaustics.a.f__mutmut_7", covering, ["tests"]) == [
        "tests/test_a.py::t1", "tests/test_b.py::t2"]
    assert recheck.tests_for("emocaustics.a.g__mutmut_1", covering, ["tests"]) == ["tests"]
    assert recheck.covering_tests(tmp_path / "none") == {}


def test_a_verdict_changes_that_mutant_only(tmp_path):
    meta = _meta(tmp_path / "a.py.meta", {"m.f__mutmut_1": 24, "m.f__mutmut_2": 24})
    recheck.write_verdict(meta, "m.f__mutmut_2", 0, 1.23456)
    data = json.loads(meta.read_text())
    assert data["exit_code_by_key"] == {"m.f__mutmut_1": 24, "m.f__mutmut_2": 0}
    assert data["durations_by_key"] == {"m.f__mutmut_1": 9.0, "m.f__mutmut_2": 1.235}
    assert data["hash_by_function_name"] == {"f": "abc"}
    assert [p.name for p in tmp_path.iterdir()] == ["a.py.meta"]
    with pytest.raises(KeyError, match="m.f__mutmut_9 is not a mutant of"):
        recheck.write_verdict(meta, "m.f__mutmut_9", 1, 0.0)


def test_within_calls_the_timeout_only_for_a_call_that_overruns():
    fired = threading.Event()
    assert recheck.within(5.0, fired.set, lambda: 7) == 7
    time.sleep(0.05)
    assert not fired.is_set()
    assert recheck.within(0.1, fired.set, lambda: fired.wait(5.0)) is True  # released by the timeout


PACKAGE = '''
import os


def double(x):
    mutant = os.environ.get("MUTANT_UNDER_TEST", "")
    if mutant.endswith("__mutmut_1"):
        return x * 3
    if mutant.endswith("__mutmut_2"):
        return x + x
    if mutant.endswith("__mutmut_3"):
        while True:
            pass
    if mutant.endswith("__mutmut_5"):
        return x - 1
    return x * 2
'''


def test_a_whole_recheck_kills_keeps_and_times_out_and_restarts_after_the_timeout(tmp_path, monkeypatch, capfd):
    (tmp_path / "pyproject.toml").write_text('[tool.mutmut]\npytest_add_cli_args = ["-p", "no:cacheprovider"]\n'
                                             'pytest_add_cli_args_test_selection = ["tests/test_double.py"]\n')
    (tmp_path / "mutants/emocaustics").mkdir(parents=True)
    (tmp_path / "mutants/emocaustics/__init__.py").write_text(PACKAGE)
    (tmp_path / "mutants/tests").mkdir()
    (tmp_path / "mutants/tests/test_double.py").write_text(textwrap.dedent('''
        from emocaustics import double

        def test_double():
            assert double(2) == 4
    '''))
    names = [f"emocaustics.double__mutmut_{i}" for i in range(1, 6)]
    meta = _meta(tmp_path / "mutants/emocaustics/__init__.py.meta", dict(zip(names, [24, 24, 24, 1, 24])))
    monkeypatch.chdir(tmp_path)
    assert recheck.main(["--limit", "3", "emocaustics.double*"]) == 0
    data = json.loads(meta.read_text())
    assert data["exit_code_by_key"] == dict(zip(names, [1, 0, 24, 1, 1]))
    assert data["durations_by_key"][names[2]] >= 3.0
    assert data["durations_by_key"][names[3]] == 9.0  # a kill is not rechecked
    assert "recheck: 2 killed, 1 survived, 1 timeout" in capfd.readouterr().out


def test_the_recheck_refuses_an_emocaustics_not_imported_from_mutants(tmp_path, monkeypatch, capfd):
    (tmp_path / "pyproject.toml").write_text('[tool.mutmut]\npytest_add_cli_args_test_selection = ["tests"]\n')
    _meta(tmp_path / "mutants/other/a.py.meta", {"emocaustics.a.f__mutmut_1": 24})  # no emocaustics in mutants/
    monkeypatch.chdir(tmp_path)
    assert recheck.main([]) == 1
    assert "the recheck would test the unmutated code" in capfd.readouterr().err
