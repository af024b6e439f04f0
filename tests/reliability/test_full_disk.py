"""A run whose disk fills up mid-way (issue 41 point 1): it printed thread tracebacks (the response cache's sqlite,
the eval log's receiver, the wall clock), then hung at 0 % CPU, and Ctrl-C gave exit 1.

The disk is made full for the run's process and its children (the eval log's writer process) by RLIMIT_FSIZE: a
write that would make any file larger than the limit fails with EFBIG, as a full disk fails it with ENOSPC (no root
or tmpfs needed). The job is `emocaustics run` of AER against the OpenAI-compatible stand-in on loopback (no engine,
no Ray): every kind of write a run makes (response cache, eval log, predictions, run.json, tables) is on the way.
It must stop within the test's timeout with exit status 7 and one line naming the path and the cause, keep every
line written whole, and a `--resume` with room must finish with exactly the results of a run that had room.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from fakes.openai_chat import FakeOpenAIServer
from tasks.aer.aer_fixtures import question, topic, write_dataset

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
N = 40
LIMIT = 64 * 1024  # bytes any one file may reach: the run's start fits, the response cache's log of its answers not
# (size in KB, response cache on it too): the trial (its cache is the run folder's), and a smaller disk that
# holds only the run folder, so that the eval log, the predictions and run.json fill it instead of the cache
TMPFS = {"tmpfs": (200, True), "tmpfs-run-folder": (40, False)}
JOB = """name: full-disk
dataset:
  aer: {{split: sample, data: "{data}"}}
models:
  oa: {{spec: "openai:fake-chat@{url}", concurrency: 4}}
runs:
  - {{task: aer, model: oa, options: {{method: llm, context: none}}}}
scoring: {{judge: none}}
"""
ENV = {"OPENAI_API_KEY": "sk-test-not-a-key", "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"}


def _limit_file_size() -> None:  # in the child, before exec: inherited by its own children
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead of killing
    resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT, LIMIT))


def _command(job: Path, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "emocaustics", "run", str(job), "--out", str(out), *extra]


def _run(job: Path, out: Path, cache: Path, *extra: str, full: bool = False) -> subprocess.CompletedProcess:
    return subprocess.run(_command(job, out, *extra),
                          env=dict(os.environ, **ENV, EMOCAUSTICS_CACHE=str(cache), EMOCAUSTICS_RESPONSE_CACHE=str(cache)),
                          capture_output=True, text=True, timeout=240,  # no hang: the test's own bound
                          preexec_fn=_limit_file_size if full else None)


def _on_tmpfs(job: Path, tmp: Path, kb: int, cache: Path) -> tuple[int, str, int, str]:
    """The issue's trial: the run and its cache on a 200 KB tmpfs (a mount namespace of its own: root, or user
    namespaces), then the tmpfs grown and the run resumed; the run folder is copied out. Skips where no tmpfs can be
    mounted."""
    mnt = tmp / "mnt"
    mnt.mkdir()
    full, resume = " ".join(_command(job, mnt / "run")), " ".join(_command(job, mnt / "run", "--resume"))
    script = f"""set -u
mount -t tmpfs -o size={kb}k tmpfs {mnt} || exit 99
timeout 240 {full} 2> {tmp}/full.err; echo $? > {tmp}/full.rc
mount -o remount,size=20m {mnt}
timeout 240 {resume} 2> {tmp}/resume.err; echo $? > {tmp}/resume.rc
cp -r {mnt}/run {tmp}/run
"""
    env = dict(os.environ, **ENV, EMOCAUSTICS_CACHE=str(cache), EMOCAUSTICS_RESPONSE_CACHE=str(cache))
    try:
        done = subprocess.run(["unshare", "-rm", "sh", "-c", script], env=env, capture_output=True, text=True,
                              timeout=600)
    except FileNotFoundError:
        pytest.skip("no unshare here")
    if done.returncode == 99 or not (tmp / "full.rc").exists():
        pytest.skip(f"no tmpfs can be mounted here: {done.stderr.strip()[:300]}")
    read = lambda name: (tmp / name).read_text(encoding="utf-8")  # noqa: E731
    return int(read("full.rc")), read("full.err"), int(read("resume.rc")), read("resume.err")


def _predictions(run: Path) -> dict[str, object]:
    folder = next((run / "predictions").iterdir())
    return {json.loads(x)["id"]: json.loads(x)["prediction"]
            for x in (folder / "predictions.jsonl").read_text(encoding="utf-8").splitlines()}


def _one_line(stderr: str) -> str:
    assert "Traceback" not in stderr and "Exception in thread" not in stderr, stderr[-3000:]
    errors = [line for line in stderr.splitlines() if line.startswith("emocaustics: error:")]
    assert len(errors) == 1, stderr[-3000:]
    return errors[0]


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory):
    """The stand-in, the job and its run with room (the results every disk's resumed run must give), shared by the
    disks: the same job gives the same results whichever disk a test then fills, and a child run of it per disk cost
    seconds each."""
    tmp = tmp_path_factory.mktemp("full-disk")
    data = write_dataset(tmp / "data", {"sample": ([question(i, 1 + (i - 1) // 4) for i in range(1, N + 1)],
                                                   [topic(t) for t in range(1, N // 4 + 1)])})
    with FakeOpenAIServer() as server:
        job = tmp / "job.yaml"
        job.write_text(JOB.format(data=data, url=server.base_url), encoding="utf-8")
        ref = _run(job, tmp / "ref", tmp / "ref-cache")
        assert ref.returncode == 0, ref.stderr[-3000:]
        yield job, tmp / "ref"


@pytest.mark.parametrize("disk", ["file-size-limit", *TMPFS])
def test_a_full_disk_stops_the_run_with_one_line_and_resume_finishes_it(disk: str, reference, tmp_path: Path) -> None:
    job, ref_dir = reference
    run = tmp_path / "run"
    if disk in TMPFS:
        kb, cache_too = TMPFS[disk]
        full_rc, full_err, resume_rc, resume_err = _on_tmpfs(
            job, tmp_path, kb, tmp_path / "mnt" / "cache" if cache_too else tmp_path / "cache")
        where, cause = tmp_path / "mnt", "No space left on device (ENOSPC)"
    else:
        full = _run(job, run, tmp_path / "cache", full=True)
        full_rc, full_err = full.returncode, full.stderr
        where, cause = tmp_path, "disk I/O error"  # sqlite's words for EFBIG (a full disk: ENOSPC's)
        assert json.loads((run / "run.json").read_text())["state"] == "running"  # whole, and not finished
        assert not (run / "scores.parquet").exists()
        written = _predictions(run) if list(run.rglob("predictions.jsonl")) else {}
        assert written.items() <= _predictions(ref_dir).items()  # (how many: the timing's)
        assert list(run.rglob("staging/*.jsonl"))  # the samples' log lines staged before the stop are kept
        for kept in run.rglob("*.jsonl"):  # every line written is whole
            for line in kept.read_text(encoding="utf-8").splitlines():
                json.loads(line)
        assert not list(run.rglob("*.tmp")), list(run.rglob("*.tmp"))
        resumed = _run(job, run, tmp_path / "cache", "--resume")
        resume_rc, resume_err = resumed.returncode, resumed.stderr
    assert full_rc == 7, full_err[-3000:]
    line = _one_line(full_err)
    # the config it stopped in (when a sample's write met it), the path and the cause, and how to continue
    assert line.startswith("emocaustics: error: ") and f"cannot write {where}/" in line, line
    assert f"{cause}; what was written is kept" in line and "--resume" in line, line
    assert resume_rc == 0, resume_err[-3000:]
    assert _predictions(run) == _predictions(ref_dir)
    assert len(_predictions(run)) == N
    got, want = (pl.read_parquet(r / "scores.parquet") for r in (run, ref_dir))
    cols = [c for c in ("run", "sample_id", "score", "failed") if c in want.columns]
    assert got.select(cols).sort(cols[:2]).equals(want.select(cols).sort(cols[:2]))
