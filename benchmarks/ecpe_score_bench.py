"""ECPE scoring benchmark: the official SemEval-2024 Task 3 metrics on all 341 test conversations, both subtasks,
for the oracle and the baseline predictions.

Two paths are timed, each the best of `REPEATS` runs:
- `files`: what `emocaustics score ecpe` does -- read the gold and prediction JSON files, check every pair, score;
- `task`:  `EcpeTask.score` on loaded samples -- the official figures plus the per-conversation rows, per-emotion
           tables and per-pair items of a job.

    python -m benchmarks.ecpe_score_bench [--quick]      # --quick: 3 repeats instead of 7
Writes benchmarks/results/ecpe_score_bench.json and .md (with the machine's 1-minute load average beside each
timing: the machine is shared). Ceiling: scoring both subtasks of the whole set under 2 s.
Needs the data ($EMOCAUSTICS_ECAC_DATA, the fetch cache, or ../shared/datasets/ecac beside the checkout).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

from emocaustics.core.task import parse_options

RESULTS = Path(__file__).resolve().parent / "results"
SHARED = Path(__file__).resolve().parents[1] / ".." / "shared" / "datasets" / "ecac"
CEILING_SECONDS = 2.0
REPEATS = 7


def _root() -> Path:
    from emocaustics.core.errors import UsageError
    from emocaustics.tasks.ecpe import data

    try:
        return data.locate(None)
    except UsageError:
        if (SHARED / "Subtask_1_test.json").is_file():
            return SHARED.resolve()
        raise


def _best(fn: Callable[[], Any], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def run(quick: bool = False) -> dict:
    from emocaustics.core.task import ScoreContext
    from emocaustics.tasks.ecpe import data
    from emocaustics.tasks.ecpe.official import PRIMARY
    from emocaustics.tasks.ecpe.scoring import score_records
    from emocaustics.tasks.ecpe.task import EcpeTask
    from emocaustics.tasks.ecpe.validate import load_json

    repeats = 3 if quick else REPEATS
    root = _root()
    t0 = time.perf_counter()
    loaded = data.load(root)
    load_seconds = time.perf_counter() - t0
    task = EcpeTask()
    figures: dict[str, Any] = {"conversations": len(loaded.samples), "load_seconds": round(load_seconds, 4)}
    worst = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for method in ("oracle", "baseline"):
            opts = parse_options(task, {"method": method})
            preds = task.predict(method, loaded.samples, opts)
            out = Path(tmp) / method
            task.finalize(out, loaded.samples, preds, opts)

            def files() -> list[Any]:
                return [score_records(st, load_json(root / data.FILES[st]), load_json(out / f"Subtask_{st}_pred.json"),
                                      gold_file=str(root / data.FILES[st]), pred_file=f"Subtask_{st}_pred.json")
                        for st in (1, 2)]

            def in_task() -> Any:
                return task.score(loaded.samples, preds, opts, ScoreContext())

            results = files()
            # the machine is shared: its 1-minute load average beside each timing says how busy it was
            figures[f"{method}_load_1m_before"] = round(os.getloadavg()[0], 2)
            figures[f"{method}_files_seconds"] = round(_best(files, repeats), 4)
            figures[f"{method}_task_seconds"] = round(_best(in_task, repeats), 4)
            figures[f"{method}_load_1m_after"] = round(os.getloadavg()[0], 2)
            figures[f"{method}_task_rows"] = in_task().rows.height
            for r in results:
                figures[f"{method}_{PRIMARY[r.subtask]}"] = r.scores[PRIMARY[r.subtask]]
            worst = max(worst, figures[f"{method}_files_seconds"], figures[f"{method}_task_seconds"])
    return {
        "name": "ecpe_score_bench",
        "figures": figures,
        "inputs": {"data": str(root), "repeats": repeats, "subtasks": [1, 2], "predictors": ["oracle", "baseline"]},
        "notes": ["seconds: best of the repeats, both subtasks together; `files` reads and checks the JSON files "
                  "like `emocaustics score ecpe`, `task` is EcpeTask.score with rows, tables and items",
                  f"cpus: {os.cpu_count()}"],
        "floors": {"whole_set_both_subtasks_seconds": {"value": round(worst, 4), "floor": CEILING_SECONDS,
                                                        "ok": worst < CEILING_SECONDS}},
    }


def to_markdown(out: dict) -> str:
    f = out["figures"]
    lines = ["| predictor | files path (s) | task path (s) | load avg 1 min (before / after) | weighted_strict_f1 "
             "| weighted_f1 |", "| --- | --- | --- | --- | --- | --- |"]
    for m in ("oracle", "baseline"):
        lines.append(f"| {m} | {f[f'{m}_files_seconds']} | {f[f'{m}_task_seconds']} | {f.get(f'{m}_load_1m_before')} / "
                     f"{f.get(f'{m}_load_1m_after')} | {f[f'{m}_weighted_strict_f1']} | {f[f'{m}_weighted_f1']} |")
    floor = out["floors"]["whole_set_both_subtasks_seconds"]
    lines.append(f"\n{f['conversations']} conversations; slowest path {floor['value']} s (ceiling {floor['floor']} s: "
                 f"{'ok' if floor['ok'] else 'OVER'})")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.ecpe_score_bench")
    parser.add_argument("--quick", action="store_true")
    out = run(quick=parser.parse_args().quick)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "ecpe_score_bench.json").write_text(json.dumps(out, ensure_ascii=False, indent=1), encoding="utf-8")
    (RESULTS / "ecpe_score_bench.md").write_text("# ecpe_score_bench\n\n`python -m benchmarks.ecpe_score_bench`\n\n"
                                                 + to_markdown(out), encoding="utf-8")
    print(json.dumps(out, ensure_ascii=False, indent=1))
    print(to_markdown(out))


if __name__ == "__main__":
    main()
