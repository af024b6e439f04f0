"""`emocaustics eval TASK` imports what its run needs only (issue 55 point 1): the task it runs (tasks/__init__.py
BUILT_IN names each built-in task's package, imported when asked for), no scipy until a table has a pair to test, no
Ray for a run without a model, no model library. A fresh interpreter: what an earlier test imported does not count."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

from emocaustics.core import task as registry
from emocaustics.tasks import BUILT_IN
from tasks.aer.aer_fixtures import standard_dataset

HEAVY = ("scipy", "statsmodels", "ray", "vllm", "transformers", "sentence_transformers", "torch")

CODE = """
import json, sys
from emocaustics.cli import main
code = main(["eval", "aer", "--method", "oracle", "--split", "sample", "-D", "data=" + sys.argv[1], "--out", sys.argv[2]])
heavy = {"scipy", "statsmodels", "matplotlib", "ray", "vllm", "transformers", "sentence_transformers", "torch"}
print(json.dumps([code, sorted(m for m in sys.modules if m.split(".")[0] in heavy
                  or m.startswith("emocaustics.tasks.") and not m.startswith("emocaustics.tasks.aer"))]))
"""


def test_an_aer_oracle_eval_imports_no_other_task_and_no_heavy_library(tmp_path: Path) -> None:
    data = standard_dataset(tmp_path / "aer")
    out = subprocess.run([sys.executable, "-c", CODE, str(data), str(tmp_path / "run")], capture_output=True,
                         text=True, timeout=120, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    code, loaded = json.loads(out.stdout.strip().splitlines()[-1])
    assert code == 0, out.stderr[-2000:]
    assert (tmp_path / "run" / "summary.md").is_file()
    other_tasks = [m for m in loaded if m.startswith("emocaustics.tasks.") and m != "emocaustics.tasks.parts"]
    assert not other_tasks, other_tasks  # tasks/parts.py: the shared parts aer's task is built from
    assert not [m for m in loaded if m.split(".")[0] in HEAVY], loaded


def test_every_task_folder_is_named_and_registers_the_names_it_is_listed_under() -> None:
    folders = {p.name for p in Path(registry.__file__).parents[1].joinpath("tasks").iterdir()
               if (p / "__init__.py").is_file()}
    assert set(BUILT_IN.values()) == folders
    for name, package in BUILT_IN.items():
        module = importlib.import_module(f"emocaustics.tasks.{package}")
        if name.startswith("."):  # a task-file suffix: the package reads such files
            assert callable(module.task_from_file), package
        else:
            assert registry.get_task(name).name == name
