"""Run folders that cannot be overwritten by accident.

A run folder holds `run.json`: the job's name, the hash of everything that determines its results (`job_hash`), its
state (`running` until the tables and report are written, then `finished`) and the wall time of each config's
attempts (`wall_parts`: a killed attempt's time is kept, so a resumed config's wall time is the sum of its parts).

`claim` decides, before anything is written, whether a job may use a folder:
- a missing or empty folder: yes (a fresh run);
- `--resume`: only a folder holding a run of a job with the same hash (`ResumeMismatch` otherwise, `NothingToResume`
  for a missing or empty folder);
- a folder holding anything else: `RunFolderTaken`, unless `--force`, which moves the old folder aside to a sibling
  (`<name>.replaced-<timestamp>`), never deleting it.
`start` makes it real under an exclusive `flock` of the folder's `run.lock` (which says who holds it), held for the
run's life and let go by the kernel however the process ends: two processes that both found a folder free cannot both
run in it (the second is refused with a line naming the first), and a killed run's folder can be resumed at once.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import shlex
import socket
import sys
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from emocaustics.core.errors import NothingToResume, ResumeMismatch, RunFolderTaken, UsageError, WriteFailed
from emocaustics.core.redact import redacted
from emocaustics.core.writes import NO_ROOM, atomic_json, failed
from emocaustics.jobs.spec import JobSpec, result_fields

if TYPE_CHECKING:
    from emocaustics.jobs.configs import Resolved

RUN_FILE = "run.json"
LOCK_FILE = "run.lock"


def job_hash(job: JobSpec) -> str:
    return _digest(result_fields(job))


def _digest(fields: dict[str, Any]) -> str:
    text = json.dumps(fields, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def read_run(run_dir: Path) -> dict[str, Any] | None:
    path = run_dir / RUN_FILE
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {"job": "?", "hash": "?", "state": "unreadable"}


BASE_DIR_ENV = "EMOCAUSTICS_BASE_DIR"


def base_dir() -> Path:
    """The folder a job's relative output paths (`output:`, `run --out`) are resolved against: `$EMOCAUSTICS_BASE_DIR`,
    else the current directory. A job sent by `jobs/submit.sh` runs in Ray's temporary copy of the project (deleted
    with it); submit.sh sets the variable to the folder the user submitted from, so a submitted job writes where a
    local run started there would."""
    return Path(os.path.abspath(os.environ.get(BASE_DIR_ENV) or os.getcwd()))


def output_path(path: str | Path) -> Path:
    """An output path made absolute against `base_dir()` (an absolute path is kept)."""
    return Path(os.path.abspath(base_dir() / Path(path).expanduser()))


def resolve_run_dir(job: JobSpec, out: str | None, resume: bool) -> Path:
    """The run folder, absolute: a relative `--out` or `output:` is resolved against `base_dir()` (the folder a
    submitted job was sent from), so the path the job prints is where its results are."""
    if out:
        return output_path(out)
    base = output_path(job.output) / job.name
    if resume:
        previous = sorted(p for p in base.glob("*") if (p / RUN_FILE).exists() or (p / "config.yaml").exists())
        if not previous:
            raise NothingToResume(f"--resume: no earlier run of job {job.name!r} under {base}")
        return previous[-1]
    return base / datetime.now().strftime("%Y%m%d-%H%M%S")


def _describe(record: dict[str, Any] | None, run_dir: Path) -> str:
    if record is None:
        return f"{run_dir} is not empty and holds no run.json (not a run folder of this version)"
    return f"{run_dir} holds a {record.get('state', '?')} run of job {record.get('job')!r} (hash {record.get('hash')})"


def _differences(old: dict[str, Any] | None, new: dict[str, Any]) -> str:
    if not old:
        return ""
    keys = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
    return f"; they differ in: {', '.join(keys)}" if keys else ""


@dataclass
class Claim:
    run_dir: Path
    resumed: bool
    record: dict[str, Any]
    moved_to: Path | None = None  # where --force put the previous folder
    # run.json's writers (the job, each running config's clock thread) change `record` and save it under this lock,
    # so that the file on disk is always the newest record (a save of an older one cannot land after it)
    lock: threading.RLock = field(default_factory=threading.RLock, repr=False, compare=False)
    held: Any = field(default=None, repr=False, compare=False)  # run.lock, open and locked (`start` to `finish`)
    config_yaml: str = ""  # the resolved spec (`Resolved.config_yaml`), config.yaml once the claim is made real

    def save(self) -> None:
        with self.lock:
            atomic_json(self.record, self.run_dir / RUN_FILE)  # a full disk: the last whole record stays


# The run folders this process holds, by path: a run stopped by an error and resumed in the same process (the Python
# API, a test) takes its own lock again; a Ctrl-C marks them all interrupted (`interrupted`).
_HELD: dict[Path, Claim] = {}


def _occupied(run_dir: Path) -> bool:
    return run_dir.is_dir() and any(p.name != LOCK_FILE for p in run_dir.iterdir())


def _hold(run_dir: Path) -> Any:
    """run.lock of `run_dir`, open and exclusively locked with this process's line in it; RunFolderTaken naming the
    holder when another process has it."""
    if (mine := _HELD.pop(run_dir, None)) is not None:  # this process's own, from a run that stopped
        held, mine.held = mine.held, None
        return held
    f = open(run_dir / LOCK_FILE, "a+", encoding="utf-8")  # noqa: SIM115 (open for the run's life)
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        f.seek(0)
        holder = f.read().strip() or "a process that has not yet written its line"
        f.close()
        raise RunFolderTaken(f"{run_dir} is in use by another run: {holder}; wait for it to end (then --resume "
                             "continues it), or give another --out") from None
    f.truncate(0)
    command = redacted(shlex.join(sys.argv))  # a URL's password in a model spec stays out of the file
    f.write(f"pid {os.getpid()} on {socket.gethostname()} since "
            f"{datetime.now(timezone.utc).isoformat(timespec='seconds')}: {command}\n")
    f.flush()
    return f


def _let_go(c: Claim) -> None:
    _HELD.pop(c.run_dir, None)
    if c.held is not None:
        c.held.close()  # closing the file lets go of the lock
        c.held = None


def claim(run_dir: Path, resolved: Resolved, *, resume: bool, force: bool) -> Claim:
    """May the job (`resolved`: its result fields and config.yaml, made where it was resolved) use `run_dir`? Raises
    a named error when not; writes nothing (see `start`)."""
    job, fields, config_yaml = resolved.job, resolved.fields, resolved.config_yaml
    digest = _digest(fields)
    present = _occupied(run_dir)
    if run_dir.exists() and not run_dir.is_dir():
        raise RunFolderTaken(f"{run_dir} is a file, not a run folder")
    above = next((p for p in run_dir.parents if os.path.lexists(p)), None)
    if not run_dir.exists() and above is not None and not above.is_dir():  # --out under a file (or a broken link)
        raise UsageError(f"the run folder {run_dir} cannot be made: {above} is not a folder")
    record = read_run(run_dir) if present else None
    if resume:
        if not present:
            raise NothingToResume(f"--resume: {run_dir} {'is empty' if run_dir.exists() else 'does not exist'}; "
                                  "there is no run to continue (leave out --resume to start one)")
        if record is None or record.get("hash") != digest:
            raise ResumeMismatch(f"--resume: {_describe(record, run_dir)}, not of this job {job.name!r} (hash "
                                 f"{digest}){_differences((record or {}).get('fields'), fields)}; "
                                 "resume it with its own job file, or start this job in another --out")
        return Claim(run_dir, True, record, config_yaml=config_yaml)
    if present and not force:
        raise RunFolderTaken(f"{_describe(record, run_dir)}; use --resume to continue it (same job), --force to "
                             "move it aside (it is kept), or another --out")
    fresh = {"job": job.name, "hash": digest, "state": "new", "fields": fields, "wall_parts": {}}
    return Claim(run_dir, False, fresh, moved_to=_aside(run_dir) if present else None, config_yaml=config_yaml)


def _aside(run_dir: Path) -> Path:
    """A sibling name for the folder `--force` replaces (computed now, moved in `start`)."""
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    target = run_dir.with_name(f"{run_dir.name}.replaced-{stamp}")
    n = 1
    while target.exists():
        n += 1
        target = run_dir.with_name(f"{run_dir.name}.replaced-{stamp}-{n}")
    return target


def start(c: Claim) -> None:
    """Make the claim real, after every pre-flight check passed: move a forced-out run aside, create the folder,
    write run.json (state `running`) and config.yaml."""
    try:
        if c.moved_to is not None:  # not from under a run still going in it
            held = _hold(c.run_dir)
            os.replace(c.run_dir, c.moved_to)
            held.close()
            print(f"--force: the previous run in {c.run_dir} was moved to {c.moved_to}", flush=True)
        c.run_dir.mkdir(parents=True, exist_ok=True)
        c.held = _hold(c.run_dir)
    except OSError as exc:  # nothing has run: a folder that cannot be made (/proc/x, no permission) is a usage error
        if exc.errno in NO_ROOM:
            raise failed(c.run_dir, exc) from None
        raise UsageError(f"the run folder {c.run_dir} cannot be made: {exc.strerror or exc} "
                         f"({errno.errorcode.get(exc.errno or 0, 'error')}); give another --out") from None
    _HELD[c.run_dir] = c
    if not c.resumed and _occupied(c.run_dir):  # another run started and ended here since `claim` found it free
        _let_go(c)
        raise RunFolderTaken(f"{_describe(read_run(c.run_dir), c.run_dir)}; it started after this job found the "
                             "folder free: use --resume to continue it (same job), or another --out")
    with c.lock:
        c.record["state"] = "running"
        c.record.setdefault("started", datetime.now(timezone.utc).isoformat(timespec="seconds"))
        c.record.setdefault("wall_parts", {})
        c.save()
    (c.run_dir / "config.yaml").write_text(c.config_yaml, encoding="utf-8")


def finish(c: Claim) -> None:
    with c.lock:
        c.record["state"] = "finished"
        c.record["finished"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
        c.save()
    _let_go(c)


def interrupted() -> list[Claim]:
    """After a Ctrl-C: the runs this process had going, each marked `interrupted` in its run.json (`--resume`
    continues it) and let go."""
    going = list(_HELD.values())  # started, not finished
    for c in going:
        with c.lock:
            c.record["state"] = "interrupted"
            c.save()
        _let_go(c)
    return going


class WallClock:
    """Times one attempt of one config and keeps it in run.json as it goes (every `interval` seconds), so that the
    time of an attempt killed mid-way still counts when the config is resumed. Use it as a context manager: an
    attempt that raises (a dead endpoint, a budget) is stopped and saved too, and its thread does not outlive the job
    (left running, it rewrote run.json with this job's record after a resume in the same process had written its
    own, and failed once the folder was gone)."""

    def __init__(self, c: Claim, label: str, interval: float = 5.0) -> None:
        self.claim, self.label, self.interval = c, label, interval
        with c.lock:
            parts = c.record.setdefault("wall_parts", {}).setdefault(label, [])
            self.index = len(parts)
            parts.append(0.0)
        self.t0 = time.perf_counter()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True, name=f"wallclock {label}")
        self._thread.start()

    def __enter__(self) -> WallClock:
        return self

    def __exit__(self, kind: type[BaseException] | None, *exc: object) -> None:
        try:
            self.stop()
        except WriteFailed:  # the run already stops with an error (or a Ctrl-C): that one is the one named
            if kind is None:
                raise

    def _save(self) -> None:
        with self.claim.lock:
            self.claim.record["wall_parts"][self.label][self.index] = round(time.perf_counter() - self.t0, 2)
            self.claim.save()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self._save()
            except WriteFailed:  # a full disk: `stop` saves once more and raises it, in the job's own thread
                return

    def stop(self) -> float:
        """End this attempt; the config's wall time: the sum of all its attempts. Once is enough: a second call
        saves nothing and returns the same sum."""
        if not self._stop.is_set():
            self._stop.set()
            self._thread.join()
            self._save()
        return round(sum(self.claim.record["wall_parts"][self.label]), 2)
