"""Every shipped job that runs offline, run from a given source tree, for a before/after check of a refactoring.

    python -m benchmarks.shipped_jobs --tree DIR --out RUNS [--only NAME ...]

Runs, with this interpreter and `PYTHONPATH=DIR` (so a `git worktree` of an older commit runs its own code):
every job in `jobs/` that needs no GPU and no remote endpoint (the quickstarts and `narrative-folder`), and a
paper-100 calibration job (oracle and baseline of `sextuple` and `emotion` on the paper-100 split: the rows of
`jobs/paper-100.yaml` that need no 72B model). Each job writes `RUNS/<name>/`; then

    python -m benchmarks.compare_runs --rtol 1e-6 BEFORE/quickstart AFTER/quickstart ...

compares the tables (issue 40: identical `scores.parquet`, `summary.csv` and `tables/` before and after). The jobs
that need a GPU model or a paid endpoint (`aer-test-grid`, `full`, `long-20-window-grid`, `paper-100`'s LLM rows)
are not run: nothing here can host them.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OFFLINE_JOBS = ("quickstart", "aer-quickstart", "ecpe-quickstart", "human-quickstart", "narrative-quickstart",
                "narrative-folder")
PAPER_100_CALIBRATION = """\
name: paper-100-calibration
description: the calibration rows of jobs/paper-100.yaml (no model)
dataset:
  subset: paper-100
runs:
  - {task: sextuple, method: oracle}
  - {task: sextuple, method: baseline}
  - {task: emotion, method: oracle}
  - {task: emotion, method: baseline}
scoring:
  embedder: minilm
  judge: none
"""


# The local copies of the public data beside the checkout (`../shared/datasets/`, as in CI), unless set already.
DATA_ENV = {"EMOCAUSTICS_DATA": "emocaustics", "EMOCAUSTICS_AER_DATA": "aer", "EMOCAUSTICS_ECAC_DATA": "ecac",
            "EMOCAUSTICS_HUMANEVAL_DATA": "humaneval"}


def run_job(tree: Path, job: Path, out: Path) -> tuple[int, float]:
    env = dict(os.environ, PYTHONPATH=str(tree), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    shared = REPO.parent / "shared" / "datasets"
    env.update({k: str(shared / v) for k, v in DATA_ENV.items() if k not in env and (shared / v).is_dir()})
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "emocaustics", "run", str(job), "--out", str(out), "--force"],
                          cwd=tree, env=env)
    return done.returncode, time.monotonic() - start


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", type=Path, default=REPO, help="source tree to run (default: this checkout)")
    ap.add_argument("--out", type=Path, required=True, help="folder for the run folders, one per job")
    ap.add_argument("--only", nargs="*", help="job names to run (default: all)")
    args = ap.parse_args(argv)
    tree = args.tree.resolve()
    with tempfile.TemporaryDirectory() as tmp:
        calibration = Path(tmp) / "paper-100-calibration.yaml"
        calibration.write_text(PAPER_100_CALIBRATION)
        jobs = {name: tree / "jobs" / f"{name}.yaml" for name in OFFLINE_JOBS}
        jobs["paper-100-calibration"] = calibration
        worst = 0
        for name, job in jobs.items():
            if args.only and name not in args.only:
                continue
            code, seconds = run_job(tree, job, args.out.resolve() / name)
            print(f"{name}: exit {code} in {seconds:.1f} s", flush=True)
            worst = max(worst, code)
    return worst


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
