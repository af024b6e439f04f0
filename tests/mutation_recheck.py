"""Recheck, in this process and without fork, the mutants that `mutmut run` reported as `timeout` (`make mutation`).

Why: mutmut 3 runs each mutant's tests in a child forked from a process that has threads. Some of those children
hang (one thread waiting on a lock that another thread held at fork time) until mutmut's wall limit, and mutmut then
records `timeout`, which `tests/mutation_report.py` counts as a kill. Rechecked without fork, several such
"timeouts" were survivors. So every mutant whose status is `timeout` (optionally also `not checked` / `suspicious`,
`--also`) among the given mutant-name globs (as given to `mutmut run` and `tests/mutation_report.py`) is run again
here: one `pytest.main` per mutant, in a worker process that imports `emocaustics` from `mutants/`, with mutmut's own
pytest arguments for a mutant run (`-x -q -p no:randomly ...`, then `pytest_add_cli_args` from pyproject's
`[tool.mutmut]`) against the tests that cover the mutated function (`mutants/mutmut-stats.json`, as mutmut runs
them) or, where none are recorded, `pytest_add_cli_args_test_selection`.

What it counts, written at once into the mutant's `mutants/**/*.meta` (`exit_code_by_key`), so that
`tests/mutation_report.py` then reports true figures: pytest's exit code as mutmut reads it (1 killed: a test failed;
0 survived; 3, pytest's internal error, killed; 5 no tests), and 24 (a true timeout) for a mutant whose tests still run
after `--limit` seconds (30) and after three times their clean run: an endless loop, say. A hung `pytest.main` cannot be stopped safely in-process, so the
worker then writes 24 and exits, and this script starts a fresh worker for the rest. Before the first mutant of each
test list the worker runs that list once with no mutant: if that fails, in-process results would mean nothing and it
stops with an error. Run from the repository root, after `mutmut run`.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
from pathlib import Path

TIMEOUT = 24  # what mutmut itself records for SIGXCPU: `timeout`
WORKER_TIMED_OUT = 3  # the worker's exit status after it recorded a mutant as a true timeout
CLEAN_LIMIT = 900.0  # seconds for a mutant's covering tests with no mutant on (more: something is wrong)
# mutmut's own arguments for one mutant's run (mutmut/runners/harness.py), before the covering tests
MUTMUT_RUN_ARGS = ["--rootdir=.", "--tb=native", "-x", "-q", "-p", "no:randomly", "-p", "no:random-order"]


def pytest_config(pyproject_text: str) -> tuple[list[str], list[str]]:
    """`pytest_add_cli_args` and `pytest_add_cli_args_test_selection` of `[tool.mutmut]` (empty where not set)."""
    cfg = tomllib.loads(pyproject_text).get("tool", {}).get("mutmut", {})
    return list(cfg.get("pytest_add_cli_args", [])), list(cfg.get("pytest_add_cli_args_test_selection", []))


def status_of(exit_code: int | None) -> str:
    from mutmut.stats import status_by_exit_code  # mutmut's own reading of an exit code

    return status_by_exit_code[exit_code]


def mutants_to_recheck(mutants_dir: Path, patterns: list[str], statuses: set[str]) -> list[tuple[Path, str]]:
    """(meta file, mutant name) of every mutant in `mutants_dir` whose status is one of `statuses` and whose name
    matches one of `patterns` (all when none), in file then name order."""
    found = []
    for meta in sorted(mutants_dir.rglob("*.py.meta")):
        codes = json.loads(meta.read_text(encoding="utf-8"))["exit_code_by_key"]
        for name, code in sorted(codes.items()):
            if status_of(code) in statuses and (not patterns or any(fnmatch.fnmatch(name, p) for p in patterns)):
                found.append((meta, name))
    return found


def covering_tests(mutants_dir: Path) -> dict[str, list[str]]:
    """Test node ids per mangled function name, from mutmut's stats run ({} when it has not run)."""
    try:
        data = json.loads((mutants_dir / "mutmut-stats.json").read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    return {name: sorted(tests) for name, tests in data["tests_by_mangled_function_name"].items()}


def tests_for(mutant: str, covering: dict[str, list[str]], selection: list[str]) -> list[str]:
    """The tests mutmut runs for `mutant` (those that cover its function), else the whole test selection."""
    return covering.get(mutant.partition("__mutmut_")[0]) or list(selection)


def write_verdict(meta: Path, mutant: str, exit_code: int, seconds: float) -> None:
    """Set `mutant`'s exit code and duration in `meta`, replacing the file atomically (a kill mid-write loses
    nothing); every other key stays as mutmut wrote it."""
    data = json.loads(meta.read_text(encoding="utf-8"))
    if mutant not in data["exit_code_by_key"]:
        raise KeyError(f"{mutant} is not a mutant of {meta}")
    data["exit_code_by_key"][mutant] = exit_code
    data.setdefault("durations_by_key", {})[mutant] = round(seconds, 3)
    tmp = meta.with_name(meta.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=4), encoding="utf-8")
    os.replace(tmp, meta)


def within(seconds: float, on_timeout, call):
    """`call()`, with `on_timeout` called from another thread if it runs longer than `seconds` (it must end the
    process: the hung call cannot be interrupted)."""
    timer = threading.Timer(seconds, on_timeout)
    timer.daemon = True
    timer.start()
    try:
        return call()
    finally:
        timer.cancel()


def _worker(job_path: Path, progress_path: Path) -> int:
    """Check the job's mutants in this process; append `name<TAB>exit code` to `progress_path` after each."""
    job = json.loads(job_path.read_text(encoding="utf-8"))
    mutants_dir = Path(job["mutants"]).resolve()
    repo = mutants_dir.parent
    # Import emocaustics from mutants/, never the repository's own copy (an editable install points there).
    sys.path[:] = [str(mutants_dir)] + [p for p in sys.path if Path(p or ".").resolve() not in (repo, repo / "tests")]
    import emocaustics

    origin = getattr(emocaustics, "__file__", None)  # None for a namespace package (no __init__.py)
    if not origin or mutants_dir not in Path(origin).resolve().parents:
        raise SystemExit(f"emocaustics was imported from {origin}, not from {mutants_dir}: "
                         "the recheck would test the unmutated code")
    import pytest
    from mutmut.mutation.trampoline import set_mutant_under_test

    os.chdir(mutants_dir)
    progress = os.open(progress_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    terminal = os.dup(1)  # our progress lines go here while pytest's own output goes to /dev/null

    def run(mutant: str, tests: list[str]) -> int:
        set_mutant_under_test(mutant)  # "" is the unmutated code
        saved = sys.stdout, sys.stderr
        with open(os.devnull, "w") as devnull:
            sys.stdout = sys.stderr = devnull
            try:
                code = int(pytest.main(MUTMUT_RUN_ARGS + tests + job["add_cli_args"]))
            except Exception:
                if not mutant:
                    raise
                # raised out of pytest itself under a mutant (a thread's error that the warnings filter turns into
                # an exception at the session's end): the mutant broke the run, a kill, as a crashed child is for mutmut
                code = 1
            finally:
                sys.stdout, sys.stderr = saved
        if code == 4:
            raise SystemExit(f"pytest rejected its arguments (exit 4): {MUTMUT_RUN_ARGS + tests + job['add_cli_args']}")
        return code

    def record(meta: Path, mutant: str, code: int, seconds: float) -> None:
        write_verdict(meta, mutant, code, seconds)
        os.write(progress, f"{mutant}\t{code}\n".encode())
        os.write(terminal, f"  {mutant}: {status_of(code)} ({seconds:.1f} s)\n".encode())

    clean: dict[tuple[str, ...], float] = {}  # a test list -> its seconds with no mutant on
    for meta_name, mutant, tests in job["todo"]:
        meta = Path(meta_name)
        if tuple(tests) not in clean:

            def clean_hangs(tests=tests) -> None:
                os.write(terminal, f"the unmutated code's tests run past {CLEAN_LIMIT} s: {tests}\n".encode())
                os._exit(1)

            began = time.monotonic()
            if within(CLEAN_LIMIT, clean_hangs, lambda: run("", tests)) != 0:
                raise SystemExit(f"the tests of {mutant} fail in-process on the unmutated code: {tests}")
            clean[tuple(tests)] = time.monotonic() - began
        start = time.monotonic()

        def give_up(meta=meta, mutant=mutant, start=start) -> None:
            record(meta, mutant, TIMEOUT, time.monotonic() - start)
            os._exit(WORKER_TIMED_OUT)

        # a true timeout: past --limit and past three times the same tests' clean run (the end-to-end tests that
        # cover some framework functions take more than 30 s on a loaded 2-core machine even with no mutant on)
        code = within(max(job["limit"], 3 * clean[tuple(tests)]), give_up, lambda: run(mutant, tests))
        record(meta, mutant, code, time.monotonic() - start)
    return 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("patterns", nargs="*", help="mutant-name globs, as given to mutmut run (all when none)")
    parser.add_argument("--also", default="", help="more statuses to recheck, comma-separated: 'not checked,suspicious'")
    parser.add_argument("--limit", type=float, default=30.0, help="seconds per mutant before it is a true timeout")
    parser.add_argument("--mutants", type=Path, default=Path("mutants"))
    parser.add_argument("--worker", nargs=2, type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return _worker(*args.worker)
    statuses = {"timeout"} | {s.strip() for s in args.also.split(",") if s.strip()}
    add_cli_args, selection = pytest_config(Path("pyproject.toml").read_text(encoding="utf-8"))
    covering = covering_tests(args.mutants)
    todo = [(str(meta.resolve()), name, tests_for(name, covering, selection))
            for meta, name in mutants_to_recheck(args.mutants, args.patterns, statuses)]
    print(f"rechecking {len(todo)} mutants ({', '.join(sorted(statuses))}) in-process, {args.limit:g} s each")
    verdicts: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as tmp:
        job_path, progress_path = Path(tmp, "job.json"), Path(tmp, "progress.tsv")
        while len(verdicts) < len(todo):
            rest = [t for t in todo if t[1] not in verdicts]
            job_path.write_text(json.dumps({"mutants": str(args.mutants), "limit": args.limit, "todo": rest,
                                            "add_cli_args": add_cli_args}), encoding="utf-8")
            rc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--worker", str(job_path), str(progress_path)]).returncode
            if progress_path.exists():
                for line in progress_path.read_text(encoding="utf-8").splitlines():
                    name, code = line.split("\t")
                    verdicts[name] = int(code)
            if rc not in (0, WORKER_TIMED_OUT) or (rc == 0 and len(verdicts) < len(todo)):
                print(f"recheck worker stopped with exit status {rc}", file=sys.stderr)
                return rc or 1
    counts: dict[str, int] = {}
    for code in verdicts.values():
        counts[status_of(code)] = counts.get(status_of(code), 0) + 1
    print("recheck: " + (", ".join(f"{n} {s}" for s, n in sorted(counts.items())) or "nothing to recheck"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
