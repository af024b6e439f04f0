"""The task contract as the core reads it (issue 54 points 7 and 8).

- Every member the core reads on a task is listed in `core/contract.py`'s `CONTRACT` (part -> members), at most
  MEMBERS_MAX of them: reads through the parts (`task.store.X`, `task.report.X`, `get_task(n).data.X`), through a
  name a part was bound to (`side = task.side`), through a function's parameter a part was handed to
  (`reducers_of(task.Options)` -> `getattr(options_class, "reducers")`), and getattr/hasattr with a constant name.
  What a part's own type already is (pydantic's `model_*` on Options/Dataset, the fields of `Methods`) is no member.
- No class passes unknown attributes through (`def __getattr__`), and the one module-level `__getattr__` is the
  package's lazy API; `ec.score` is the API function whatever of the package was imported.
"""

from __future__ import annotations

import ast
import dataclasses
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "emocaustics"
# The members the parts hand the core, all told: issue 54 point 7's goal (30) met; it may only fall. (A Dataset's
# `split_field` and `ids_field` became the one `option_for`: which option holds what the front doors set.)
MEMBERS_MAX = 30
# Members the core reads with a default of its own (getattr, or the base class's): class variables a task's models may
# declare.
OPTIONAL = {("Options", "reducers"), ("Options", "legacy_run_keys"), ("Dataset", "option_for")}


def _is_task(node: ast.AST, names: tuple[str, ...]) -> bool:
    return ((isinstance(node, ast.Name) and node.id in names)
            or (isinstance(node, ast.Attribute) and node.attr == "task")
            or (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "get_task"))


def _own(part: str, member: str) -> bool:
    """A member of the part's own type (no task's hook): pydantic's API on Options/Dataset, Methods' fields."""
    from pydantic import BaseModel

    from emocaustics.core.contract import Methods

    if part in ("Options", "Dataset"):
        return hasattr(BaseModel, member)
    return part == "methods" and (member in {f.name for f in dataclasses.fields(Methods)} or hasattr(Methods, member))


def contract_reads(sources: dict[str, str]) -> dict[tuple[str, str], list[str]]:
    """(part, member) -> where (`file:line`) for every read of a task's part member in `sources` (path -> text);
    part "" is the task itself. A bare `task` is a task in a module that imports the task interface."""
    from emocaustics.core.contract import CONTRACT

    parts = tuple(p for p, members in CONTRACT.items() if members is not None)
    trees = {f: ast.parse(s) for f, s in sources.items()}
    names = {f: ("task", "the_task") if "emocaustics.core.task import" in s or "core.contract import" in s else ()
             for f, s in sources.items()}
    defs = defaultdict(list)  # function name -> its definitions: a part handed to one binds the parameter
    for f, tree in trees.items():
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                defs[node.name].append((f, node))
    bound: dict[str, dict[str, str]] = defaultdict(dict)  # file -> name -> part (module-wide: names are short-lived)
    scoped: dict[int, dict[str, str]] = defaultdict(dict)  # id(function def) -> parameter -> part

    def part_of(node: ast.AST, f: str, local: dict[str, str]) -> str | None:
        # `task.side`, `task.solver`...: an asyncio task has no such attribute, so any bare `task` is a task here
        if isinstance(node, ast.Attribute) and node.attr in parts and _is_task(node.value, ("task", "the_task")):
            return node.attr
        if isinstance(node, ast.Name):
            return local.get(node.id) or bound[f].get(node.id)
        return None

    def walk(f: str, node: ast.AST, local: dict[str, str]):
        for child in ast.iter_child_nodes(node):
            inner = {**local, **scoped[id(child)]} if isinstance(child, (ast.FunctionDef,
                                                                        ast.AsyncFunctionDef)) else local
            yield child, inner
            yield from walk(f, child, inner)

    for _ in range(3):  # bindings through one function into another settle in a few rounds
        for f, tree in trees.items():
            for node, local in walk(f, tree, {}):
                if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                    if (p := part_of(node.value, f, local)) is not None:
                        bound[f][node.targets[0].id] = p
                elif isinstance(node, ast.Call):
                    callee = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
                    for g, fn in defs.get(callee, ()):
                        params = [a.arg for a in fn.args.args]
                        given = list(enumerate(node.args)) + [(params.index(k.arg), k.value) for k in node.keywords
                                                               if k.arg in params]
                        for i, arg in given:
                            if i < len(params) and (p := part_of(arg, f, local)) is not None:
                                scoped[id(fn)][params[i]] = p
    found: dict[tuple[str, str], list[str]] = defaultdict(list)
    for f, tree in trees.items():
        for node, local in walk(f, tree, {}):
            read = None
            if isinstance(node, ast.Attribute):
                if (p := part_of(node.value, f, local)) is not None:
                    read = (p, node.attr)
                elif _is_task(node.value, names[f]):
                    read = ("", node.attr)
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and len(node.args) > 1
                  and node.func.id in ("getattr", "hasattr")):
                member = node.args[1].value if isinstance(node.args[1], ast.Constant) else "?"
                if (p := part_of(node.args[0], f, local)) is not None:
                    read = (p, member)
                elif _is_task(node.args[0], names[f]):
                    read = ("", member)
            if read is not None and not (read[0] and _own(*read)):
                found[read].append(f"{f}:{node.lineno}")
    return dict(found)


def _core_sources() -> dict[str, str]:
    return {str(p.relative_to(PACKAGE.parent)): p.read_text(encoding="utf-8") for p in sorted(PACKAGE.rglob("*.py"))
            if p.relative_to(PACKAGE).parts[0] != "tasks"}


def test_the_scan_follows_parts_names_and_parameters():
    planted = {
        "a.py": "from emocaustics.core.task import Task\n"
                "def f(cfg, task):\n"
                "    cfg.task.store.read_back(1)\n"
                "    side = task.side\n"
                "    side.feed()\n"
                "    helper(task.Options)\n"
                "    task.Options.model_validate({})\n"
                "    get_task('x').report.colour\n"
                "    task.methods.all\n",
        "b.py": "def helper(options_class):\n"
                "    return getattr(options_class, 'reduce_predictions', {})\n",
    }
    assert contract_reads(planted) == {
        ("", "store"): ["a.py:3"], ("store", "read_back"): ["a.py:3"], ("", "side"): ["a.py:4"],
        ("side", "feed"): ["a.py:5"], ("", "Options"): ["a.py:6", "a.py:7"],
        ("Options", "reduce_predictions"): ["b.py:2"], ("", "report"): ["a.py:8"], ("report", "colour"): ["a.py:8"],
        ("", "methods"): ["a.py:9"]}


def test_the_core_reads_only_the_listed_members():
    from emocaustics.core.contract import CONTRACT

    found = contract_reads(_core_sources())
    unlisted = [f"{part or 'task'}.{member}: {', '.join(where)}" for (part, member), where in sorted(found.items())
                if member not in (CONTRACT.get(part) or () if part else CONTRACT)]
    assert not unlisted, "the core reads a task beside its contract (core/contract.py CONTRACT):\n" + \
        "\n".join(unlisted)


def test_every_listed_member_is_read_and_has_a_default():
    """A listed member no core code reads is a hook nobody needs; every member of the parts has its default on `Task`
    (or on its protocol: `side`, the one optional part, and `store`), except those the core reads with a default of
    its own (OPTIONAL: class variables of a task's models)."""
    from emocaustics.core.contract import CONTRACT, JsonlStore, SideInputs, Task

    found = contract_reads(_core_sources())
    listed = {(part, m) for part, members in CONTRACT.items() for m in members or ()}
    assert listed <= set(found), sorted(listed - set(found))
    homes = {"side": SideInputs, "store": JsonlStore}
    missing = [f"{p}.{m}" for p, m in sorted(listed - OPTIONAL) if not hasattr(homes.get(p, Task), m)]
    assert not missing, missing


def test_the_contract_is_small():
    from emocaustics.core.contract import CONTRACT

    members = [f"{part}.{m}" for part, ms in CONTRACT.items() for m in ms or ()]
    assert len(members) == len(set(members)) and len(members) <= MEMBERS_MAX, (len(members), members)


# -- no attribute pass-through (issue 54 point 8) ------------------------------------------------------------------
def getattr_defs(source: str) -> list[str]:
    """Where `__getattr__` is defined: `Class` for a class's, `<module>` for a module-level one."""
    tree = ast.parse(source)
    out = ["<module>" for f in tree.body if isinstance(f, ast.FunctionDef) and f.name == "__getattr__"]
    return out + [cls.name for cls in ast.walk(tree) if isinstance(cls, ast.ClassDef)
                  for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "__getattr__"]


def test_the_getattr_finder_finds_planted_ones():
    assert getattr_defs("class A:\n    def __getattr__(self, n): pass\ndef __getattr__(n): pass\n") == \
        ["<module>", "A"]


def test_no_getattr_pass_through_in_the_package():
    found = {str(p.relative_to(PACKAGE.parent)): d for p in sorted(PACKAGE.rglob("*.py"))
             if (d := getattr_defs(p.read_text(encoding="utf-8")))}
    assert found == {"emocaustics/__init__.py": ["<module>"]}, found  # the package's lazy API: no pass-through


def test_ec_score_is_the_function_after_the_scoring_code_is_imported():
    """Importing the scoring code binds no `score` on the package (it is `emocaustics.scoring`), and the package's
    class is the plain module's: nothing is swapped to keep `ec.score` the API function."""
    code = ("import types, emocaustics as ec, emocaustics.scoring.generic, emocaustics.api\n"
            "assert ec.score is emocaustics.api.score, ec.score\n"
            "assert type(ec) is types.ModuleType, type(ec)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
