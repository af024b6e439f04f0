"""Writes that fail (a full disk) as one line naming the path and the cause, with nothing already written lost and no
thread dying or waiting forever (issue 41 point 1). The disk is made full by patching the write each writer makes to
raise ENOSPC (a real full disk: tests/reliability/test_full_disk.py)."""

from __future__ import annotations

import errno
import json
import os
import sqlite3
import time
from pathlib import Path

import pytest

from emocaustics.core.errors import EXIT_INTERRUPTED, EXIT_WRITE_FAILED, WriteFailed
from emocaustics.core.writes import append_line, atomic_parquet, failed

ENOSPC = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def _sqlite_full() -> sqlite3.OperationalError:
    """sqlite's own SQLITE_FULL (its code, not only its words): a database capped at one page, made to grow."""
    db = sqlite3.connect(":memory:")
    try:
        db.execute("PRAGMA max_page_count = 1")
        db.execute("CREATE TABLE t (x)")
        db.execute("INSERT INTO t VALUES (?)", ("x" * 100_000,))
    except sqlite3.OperationalError as exc:
        return exc
    finally:
        db.close()
    raise AssertionError("sqlite did not refuse to grow")


SQLITE_FULL = _sqlite_full()


def test_one_line_names_the_path_and_the_cause_of_each_kind_of_full_disk() -> None:
    for exc in (ENOSPC, SQLITE_FULL,
                RuntimeError("parquet: File out of specification: underlying IO error: No space left on device "
                             "(os error 28)")):
        text = str(failed("/runs/r/x.jsonl", exc))
        assert "\n" not in text
        assert text.startswith("cannot write /runs/r/x.jsonl: No space left on device (ENOSPC)"), text
        assert "--resume" in text
    assert WriteFailed.exit_code == EXIT_WRITE_FAILED == 7
    # sqlite's full disk is told by its code (sqlite_errorcode SQLITE_FULL), not by words a message may hold
    assert SQLITE_FULL.sqlite_errorcode == sqlite3.SQLITE_FULL
    assert "ENOSPC" not in str(failed("/runs/r/x.jsonl", sqlite3.OperationalError("database or disk is full")))
    named = failed("/runs/r/x.jsonl", ENOSPC).continued("config c", "emocaustics run j.yaml --resume --out /runs/r")
    assert str(named) == ("config c: cannot write /runs/r/x.jsonl: No space left on device (ENOSPC); what was written "
                          "is kept; once there is room, to continue: emocaustics run j.yaml --resume --out /runs/r")
    assert isinstance(named, WriteFailed)


def test_a_line_cut_by_a_full_disk_is_cut_back_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "predictions.jsonl"
    append_line(path, json.dumps({"id": "1", "prediction": "A"}))
    before = path.read_bytes()
    real = os.write

    def half_then_full(fd: int, data: bytes) -> int:  # the disk takes part of the line, then nothing
        if len(data) > 10:
            return real(fd, bytes(data[:10]))
        raise ENOSPC

    monkeypatch.setattr(os, "write", half_then_full)
    with pytest.raises(WriteFailed, match=str(path)):
        append_line(path, json.dumps({"id": "2", "prediction": "B" * 100}))
    monkeypatch.undo()
    assert path.read_bytes() == before  # the lines before are whole, and no piece of the cut one is left
    append_line(path, json.dumps({"id": "3", "prediction": "C"}))  # room again: a resume appends as usual
    assert [json.loads(x)["id"] for x in path.read_text().splitlines()] == ["1", "3"]


def test_a_table_that_cannot_be_written_stays_as_it_was(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import polars as pl

    path = tmp_path / "calls.parquet"
    atomic_parquet(pl.DataFrame({"a": [1]}), path)
    monkeypatch.setattr(pl.DataFrame, "write_parquet",
                        lambda self, p, **kw: (Path(p).write_bytes(b"PAR1 cut"), (_ for _ in ()).throw(
                            pl.exceptions.ComputeError("underlying IO error: No space left on device (os error 28)"))))
    with pytest.raises(WriteFailed, match="calls.parquet: No space left on device"):
        atomic_parquet(pl.DataFrame({"a": [1, 2]}), path)
    monkeypatch.undo()
    assert pl.read_parquet(path)["a"].to_list() == [1]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["calls.parquet"]  # no temporary left


def test_the_cache_writer_thread_keeps_its_error_for_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A commit that fails in the writer thread is raised, as one line naming the file, to the next put and to
    flush; the thread does not die with a traceback (pytest fails a test on a thread's unhandled exception); the
    answers committed before stay, and once there is room the pending ones are committed."""
    from emocaustics.models.base import Completion
    from emocaustics.models.cache import ResponseCache

    cache = ResponseCache(tmp_path / "responses.sqlite")
    cache.put_many("m", [("k1", Completion(text="one"))])
    cache.flush()
    real = cache._wdb

    class Full:
        @property
        def in_transaction(self) -> bool:
            return real.in_transaction

        def execute(self, sql: str, *a: object) -> object:
            if sql.startswith("INSERT"):
                raise SQLITE_FULL
            return real.execute(sql, *a)

        def executemany(self, sql: str, *a: object) -> object:
            raise SQLITE_FULL

        def close(self) -> None:
            real.close()

    cache._wdb = Full()  # type: ignore[assignment]
    cache.put_many("m", [("k2", Completion(text="two"))])  # committed by the thread, which fails
    deadline = time.monotonic() + 30
    while cache._error is None and time.monotonic() < deadline:
        time.sleep(0.01)
    with pytest.raises(WriteFailed, match=r"responses\.sqlite: No space left on device"):
        cache.put_many("m", [("k3", Completion(text="three"))])
    with pytest.raises(WriteFailed):
        cache.flush()
    assert set(cache.get_many(["k1", "k2"])) == {"k1", "k2"}  # k2 is pending in memory, not lost
    cache._wdb = real  # room again
    cache.flush()
    cache.close()
    again = ResponseCache(tmp_path / "responses.sqlite")
    assert set(again.get_many(["k1", "k2", "k3"])) == {"k1", "k2"}
    again.close()


def test_a_wall_clock_on_a_full_disk_neither_dies_nor_hides_the_run_s_own_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from emocaustics.jobs import rundir

    c = rundir.Claim(tmp_path, False, {"job": "j", "hash": "h", "state": "running", "wall_parts": {}})
    c.save()
    before = (tmp_path / rundir.RUN_FILE).read_text()
    monkeypatch.setattr(Path, "write_text", lambda self, *a, **k: (_ for _ in ()).throw(ENOSPC))
    clock = rundir.WallClock(c, "cfg", interval=0.01)
    time.sleep(0.2)  # the clock's thread tries to save many times
    assert not clock._thread.is_alive()  # it ended, without a traceback (pytest fails a test on one)
    with pytest.raises(WriteFailed, match="run.json: No space left on device"):
        clock.stop()
    with pytest.raises(KeyboardInterrupt):  # a Ctrl-C while the disk is full stays a Ctrl-C
        with rundir.WallClock(c, "cfg2", interval=60):
            raise KeyboardInterrupt
    monkeypatch.undo()
    assert (tmp_path / rundir.RUN_FILE).read_text() == before  # the last whole record stays
    assert [p.name for p in tmp_path.iterdir()] == [rundir.RUN_FILE]  # no temporary left


def test_an_answer_for_a_cancelled_sample_does_not_kill_the_eval_log_receiver() -> None:
    """A run that stops cancels its samples' waits for their log lines; the answers that come after must not kill
    the thread that settles them (it raised InvalidStateError, and every later wait, the stop's too, hung)."""
    from emocaustics.evallog.process import ChildWriter

    child = ChildWriter(_echo, None, "test log")
    try:
        slow = [child.submit(("sleep", 0.3), f"sample {i}") for i in range(3)]
        for fut in slow:
            assert fut.cancel()
        after = child.submit(("echo", "x"), "sample 4")
        assert after.result(30) == "x"
    finally:
        assert child.stop(30) == "stopped"


def _echo(state: object):  # the child's handler (pickled by name)
    def handle(message: tuple) -> object:
        if message[0] == "sleep":
            time.sleep(message[1])
            return None
        return message[1] if message[0] == "echo" else "stopped"
    return handle


def test_a_write_failure_of_the_log_s_child_comes_back_as_its_one_line() -> None:
    from emocaustics.evallog.process import ChildWriter

    child = ChildWriter(_full, None, "test log")
    try:
        with pytest.raises(WriteFailed, match="^cannot write /x/staging/c.jsonl: No space left on device"):
            child.submit(("emit",), "sample 1").result(30)
    finally:
        child.stop(30)


def _full(state: object):
    def handle(message: tuple) -> object:
        if message[0] == "emit":
            raise failed("/x/staging/c.jsonl", OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)))
        return None
    return handle


def test_ctrl_c_is_130_even_when_the_clean_up_after_it_fails(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    """Ctrl-C during a stuck full-disk run gave exit 1: a save on the way out replaced the KeyboardInterrupt."""
    from emocaustics import cli

    def interrupted_then_full(args: object) -> int:
        try:
            raise KeyboardInterrupt
        finally:
            raise OSError(errno.ENOSPC, "No space left on device")

    def full(args: object) -> int:
        raise failed("/runs/r/predictions/c/predictions.jsonl", ENOSPC)

    for func, code in ((interrupted_then_full, EXIT_INTERRUPTED), (full, EXIT_WRITE_FAILED)):
        parser = cli.build_parser()
        monkeypatch.setattr(parser, "parse_args", lambda argv, f=func: type("A", (), {"func": staticmethod(f)})())
        monkeypatch.setattr(cli, "verb_parser", lambda argv, p=parser: p)
        assert cli.main(["tasks"]) == code
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err


def test_a_full_disk_that_no_writer_named_is_still_one_line(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    from emocaustics import cli

    import polars as pl

    for exc in (OSError(errno.ENOSPC, "No space left on device"),  # a write's, not an open's: no file name
                pl.exceptions.ComputeError("parquet: underlying IO error: No space left on device (os error 28)")):
        def bare(args: object, exc: Exception = exc) -> int:
            raise exc

        parser = cli.build_parser()
        monkeypatch.setattr(parser, "parse_args", lambda argv, f=bare: type("A", (), {"func": staticmethod(f)})())
        monkeypatch.setattr(cli, "verb_parser", lambda argv, p=parser: p)
        assert cli.main(["tasks"]) == EXIT_WRITE_FAILED
        err = capsys.readouterr().err.strip()
        assert err.startswith("emocaustics: error: cannot write") and "ENOSPC" in err and "\n" not in err, err


def test_eval_on_a_full_disk_names_its_own_command_to_continue(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    """`eval` has no job file: the runner's resume command names JOB.yaml, which eval replaces (as for a dead
    endpoint) while keeping the stop's type and exit status."""
    import emocaustics.api
    from emocaustics import cli

    def full(*args: object, **kwargs: object) -> None:
        raise failed("/r/predictions/c/predictions.jsonl", ENOSPC).continued(
            "config c", "emocaustics run JOB.yaml --resume --out /r")

    monkeypatch.setattr(emocaustics.api, "eval", full)
    assert cli.main(["eval", "aer", "--method", "oracle"]) == EXIT_WRITE_FAILED
    err = capsys.readouterr().err.strip()
    assert err == ("emocaustics: error: config c: cannot write /r/predictions/c/predictions.jsonl: No space left on "
                   "device (ENOSPC); what was written is kept; once there is room, to continue: emocaustics eval "
                   "<the same arguments> --resume --out /r"), err


def test_the_tables_and_report_on_a_full_disk_are_one_line_naming_the_run(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch,
                                                                          capsys) -> None:
    """The job's last writes (its tables: polars' own full-disk error; its report: an OSError without a file name),
    in a real run of a calibration job: one line naming the run folder, exit 7, the run left to `--resume`."""
    import shutil

    import polars as pl

    import emocaustics.report.html
    import emocaustics.report.tables
    from emocaustics import cli

    shutil.copytree(Path(__file__).resolve().parents[1] / "badinput" / "aer" / "_base" / "data", tmp_path / "data")
    job = tmp_path / "job.yaml"
    job.write_text(f'name: full\ndataset:\n  aer: {{split: sample, data: "{tmp_path / "data"}"}}\n'
                   "runs:\n  - {task: aer, options: {method: oracle}}\nscoring: {judge: none}\n", encoding="utf-8")
    monkeypatch.setenv("EMOCAUSTICS_CACHE", str(tmp_path / "cache"))
    for n, (module, name, exc) in enumerate((
            (emocaustics.report.tables, "write_tables",
             pl.exceptions.ComputeError("parquet: underlying IO error: No space left on device (os error 28)")),
            (emocaustics.report.html, "write_report", ENOSPC))):
        def full(*args: object, exc: Exception = exc) -> None:
            raise exc

        monkeypatch.setattr(module, name, full)
        run = tmp_path / f"run{n}"
        capsys.readouterr()
        assert cli.main(["run", str(job), "--out", str(run)]) == EXIT_WRITE_FAILED
        err = capsys.readouterr().err.strip()
        assert err.startswith(f"emocaustics: error: cannot write {run}: No space left on device (ENOSPC)"), err
        assert "\n" not in err
        assert json.loads((run / "run.json").read_text())["state"] == "running"
        monkeypatch.undo()
        monkeypatch.setenv("EMOCAUSTICS_CACHE", str(tmp_path / "cache"))
