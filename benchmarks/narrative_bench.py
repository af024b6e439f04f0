"""Narrative scoring benchmark: synthetic JSON-v3 file pairs, written to a temporary folder and scored from disk.

Each synthetic story has 8-30 sentences (Chinese or English), 3-5 characters with aliases and 4-12 events with
spans, relationships, sentiment and action layers drawn from the shipped taxonomies; its prediction perturbs the GT
the way annotators and models err (missed and extra events, spans one sentence off, wrong labels, aliases instead of
names) and its GT is left incomplete at random (empty relationships, action fields, archetypes, spans). Scoring reads
and parses both files, runs every component and aggregates (macro and micro), as `score narrative --pred --gt` does.

    python -m benchmarks.narrative_bench [--files N] [--workers K] [--no-ray] [--quick]
Writes benchmarks/results/narrative_bench.json and .md. Reported: files/s in one process, with K processes
(multiprocessing), as a Ray Data stream (`rayscore.score_file_pairs`: map_batches over batches of file pairs on a
local Ray of all CPUs; Ray's start is timed apart) and through the task as a job runs it (load, read predictions,
score into per-story rows through Ray Data), each with the 1-minute load average before and after it: the machine
may be shared, and a figure taken under load says so.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import random
import tempfile
import time
from pathlib import Path
from typing import Any

from emocaustics.core.task import parse_options

RESULTS = Path(__file__).resolve().parent / "results"
NAME = "narrative_bench"
COMMAND = "python -m benchmarks.narrative_bench"
ZH = "甲乙丙丁戊己庚辛壬癸天地玄黄宇宙洪荒日月盈昃辰宿列张寒来暑往秋收冬藏"
EN = ["the", "ferry", "river", "girl", "storm", "clock", "kite", "market", "house", "road", "morning", "lamp"]


def _sentence(rng: random.Random, zh: bool) -> str:
    if zh:
        return "".join(rng.choice(ZH) for _ in range(rng.randint(8, 20))) + rng.choice("。！？")
    words = [rng.choice(EN) for _ in range(rng.randint(5, 12))]
    return " ".join(words).capitalize() + rng.choice(".!?") + " "


def synthetic_pair(seed: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """(prediction, GT) documents of one synthetic story; deterministic in the seed."""
    from emocaustics.tasks.narrative.taxonomy import default_taxonomy

    tax = default_taxonomy()
    rng = random.Random(seed)
    zh = rng.random() < 0.5
    sents = [_sentence(rng, zh) for _ in range(rng.randint(8, 30))]
    starts = [sum(len(s) for s in sents[:k]) for k in range(len(sents) + 1)]
    text = "".join(sents)
    names = [f"角色{k}" if zh else f"Person{k}" for k in range(rng.randint(3, 5))]
    chars = [{"name": n, "alias": [f"{n}x"], "archetype": rng.choice(tax.archetypes)} for n in names]
    l1s = list(tax.relationships)
    events = []
    cut = sorted(rng.sample(range(1, len(sents)), min(len(sents) - 1, rng.randint(4, 12))))
    for k, (a, b) in enumerate(zip([0, *cut], [*cut, len(sents)])):
        l1 = rng.choice(l1s)
        cat = rng.choice(list(tax.categories))
        spec = tax.categories[cat]
        agent, target = rng.sample(names, 2)
        events.append({
            "id": f"e{k + 1}", "text_span": {"start": starts[a], "end": starts[b], "text": text[starts[a]:starts[b]]},
            "agents": [agent], "targets": [target],
            "relationships": [{"agent": agent, "target": target, "relationship_level1": l1,
                               "relationship_level2": rng.choice(tax.relationships[l1]),
                               "sentiment": rng.sample(list(tax.sentiments), rng.randint(1, 2))}],
            "action_layer": {"category": cat, "type": rng.choice(spec["types"]),
                             "context": rng.choice(spec["contexts"]), "status": rng.choice(spec["statuses"]),
                             "function": rng.choice(spec["functions"])}})
    gt = {"version": "3.0", "metadata": {"synthetic": seed}, "source_info": {"text_content": text},
          "characters": chars, "narrative_events": events}
    pred = json.loads(json.dumps(gt))
    for c in list(pred["characters"]):
        r = rng.random()
        if r < 0.1:
            pred["characters"].remove(c)  # a missed character
        elif r < 0.3:
            c["name"], c["alias"] = c["alias"][0], []  # named by its alias
        elif r < 0.4:
            c["archetype"] = rng.choice(tax.archetypes)
    pe = pred["narrative_events"]
    for ev in list(pe):
        r = rng.random()
        if r < 0.1:
            pe.remove(ev)  # missed event
            continue
        if r < 0.3:  # span one sentence off at its end
            k = starts.index(ev["text_span"]["end"])
            k = min(len(sents), max(starts.index(ev["text_span"]["start"]) + 1, k + rng.choice((-1, 1))))
            ev["text_span"] |= {"end": starts[k], "text": text[ev["text_span"]["start"]:starts[k]]}
        if rng.random() < 0.2:
            ev["relationships"][0]["relationship_level2"] = rng.choice(tax.level2s())
        if rng.random() < 0.2:
            ev["relationships"][0]["sentiment"] = [rng.choice(list(tax.sentiments))]
        if rng.random() < 0.2:
            ev["relationships"][0]["agent"] += "x"  # an alias
        if rng.random() < 0.2:
            ev["action_layer"]["type"] = rng.choice(tax.action_values("type"))
    if rng.random() < 0.3:
        pe.append({"id": "x1", "agents": [names[0]], "targets": [], "relationships": [],
                   "action_layer": {"category": "verbal", "type": "ask"}})  # an event absent from GT
    for ev in gt["narrative_events"]:  # incomplete GT
        r = rng.random()
        if r < 0.05:
            ev["relationships"] = []
        elif r < 0.1:
            ev["action_layer"]["context"] = ""
        elif r < 0.13:
            ev["text_span"] = None
    if rng.random() < 0.1:
        chars[0]["archetype"] = ""
    return pred, gt


def write_pairs(root: Path, n: int) -> None:
    (root / "gt").mkdir(parents=True)
    (root / "pred").mkdir()
    for i in range(n):
        pred, gt = synthetic_pair(i)
        (root / "gt" / f"s{i:05d}.json").write_text(json.dumps(gt, ensure_ascii=False), encoding="utf-8")
        (root / "pred" / f"s{i:05d}_pred.json").write_text(json.dumps(pred, ensure_ascii=False), encoding="utf-8")


def _score_files(job: tuple[str, str]) -> dict[str, Any]:
    from emocaustics.tasks.narrative.aggregate import compact
    from emocaustics.tasks.narrative.composite import score_pair

    pred_path, gt_path = job

    def read(p: str) -> Any:
        try:
            return json.loads(Path(p).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            return {"unreadable": str(exc)}

    return compact(score_pair(read(pred_path), read(gt_path), pred_name=pred_path, gt_name=gt_path))


def score_folder(root: Path, workers: int) -> tuple[dict[str, Any], float]:
    """Pair, read, score and aggregate a folder; (aggregate, seconds)."""
    from emocaustics.tasks.narrative.aggregate import aggregate
    from emocaustics.tasks.narrative.io import pair_folders

    t0 = time.perf_counter()
    pairing = pair_folders(root / "pred", root / "gt")
    jobs = [(str(p), str(g)) for _, p, g in pairing.pairs]
    if workers <= 1:
        results = [_score_files(j) for j in jobs]
    else:
        with mp.get_context("fork").Pool(workers) as pool:
            results = pool.map(_score_files, jobs, chunksize=64)
    agg = aggregate({name: r for (name, _, _), r in zip(pairing.pairs, results)})
    return agg, time.perf_counter() - t0


def score_folder_ray(root: Path) -> tuple[dict[str, Any], float]:
    """The same through Ray Data (Ray already connected): pair, stream the pairs through map_batches, aggregate."""
    from emocaustics.tasks.narrative.aggregate import aggregate
    from emocaustics.tasks.narrative.io import pair_folders
    from emocaustics.tasks.narrative.rayscore import score_file_pairs

    t0 = time.perf_counter()
    pairing = pair_folders(root / "pred", root / "gt")
    agg = aggregate(score_file_pairs(pairing.pairs))
    return agg, time.perf_counter() - t0


def score_task_ray(root: Path) -> tuple[dict[str, Any], dict[str, float]]:
    """The job's path (Ray already connected): the task loads the GT folder, reads the predictions (`files`) and
    scores every story through Ray Data into per-story rows; (summary, seconds per step)."""
    import emocaustics.tasks.narrative  # noqa: F401  (registers the task)
    from emocaustics.core.task import ScoreContext, get_task

    task = get_task("narrative")
    opts = parse_options(task, {"method": "files"})
    t0 = time.perf_counter()
    loaded = task.load(task.Dataset(data=str(root)), opts)
    t1 = time.perf_counter()
    preds = task.predict("files", loaded.samples, opts)
    t2 = time.perf_counter()
    scored = task.score(loaded.samples, preds, opts, ScoreContext(use_ray=True, scoring={"narrative_ray_above": 0}))
    t3 = time.perf_counter()
    assert scored.summary["scoring_path"] == "ray" and scored.rows.height == len(loaded.samples) * 7
    return scored.summary, {"load": t1 - t0, "predict": t2 - t1, "score": t3 - t2, "total": t3 - t0}


def _load() -> float:
    return round(os.getloadavg()[0], 2)


def _timed(label: str, fn: Any, loads: dict[str, list[float]]) -> Any:
    before = _load()
    out = fn()
    loads[label] = [before, _load()]
    return out


def run(quick: bool = False, files: int | None = None, workers: int | None = None,
        ray: bool = True) -> dict[str, Any]:
    n = files or (1000 if quick else 10_000)
    k = workers or os.cpu_count() or 1
    loads: dict[str, list[float]] = {}
    figures: dict[str, Any] = {"files": n}
    with tempfile.TemporaryDirectory(prefix="narrative_bench_") as tmp:
        root = Path(tmp)
        t0 = time.perf_counter()
        write_pairs(root, n)
        gen_s = time.perf_counter() - t0
        agg1, s1 = _timed("1_process", lambda: score_folder(root, 1), loads)
        figures |= {"files_per_s_1_process": round(n / s1, 1), "seconds_1_process": round(s1, 2)}
        if k > 1:
            aggk, sk = _timed(f"{k}_processes", lambda: score_folder(root, k), loads)
            assert aggk["overall_score"] == agg1["overall_score"]  # the parallel path scores the same
            figures |= {f"files_per_s_{k}_processes": round(n / sk, 1), f"seconds_{k}_processes": round(sk, 2)}
        if ray:
            import ray as ray_mod

            from emocaustics.core.cluster import connect

            t1 = time.perf_counter()
            started = connect()
            ray_cpus = int(ray_mod.cluster_resources().get("CPU", 0))
            figures["ray_start_seconds"] = round(time.perf_counter() - t1, 2)
            try:
                aggr, sr = _timed("ray_data", lambda: score_folder_ray(root), loads)
                summ, st = _timed("task_ray_data", lambda: score_task_ray(root), loads)
            finally:
                if started:
                    ray_mod.shutdown()
            assert aggr["overall_score"] == agg1["overall_score"]  # Ray Data scores the same
            assert aggr["files"] == agg1["files"] == summ["files_scored"]
            assert abs(summ["overall"] - agg1["overall_score"]) < 1e-9  # and so does the task's path
            figures |= {"files_per_s_ray_data": round(n / sr, 1), "seconds_ray_data": round(sr, 2),
                        "ray_cpus": ray_cpus, "files_per_s_task_ray_data": round(n / st["total"], 1)}
            figures |= {f"seconds_task_{k}": round(v, 2) for k, v in st.items()}
    figures |= {"generate_seconds": round(gen_s, 2), "overall_score": round(agg1["overall_score"], 4),
                "overall_micro": round(agg1["overall_micro"], 4)}
    figures |= {f"{c}_macro": round(v["macro"], 4) for c, v in agg1["component_scores"].items()
                if v["macro"] is not None}
    notes = ["scoring time includes pairing, reading and parsing both files, every component and the aggregate; "
             "generation is timed apart",
             f"{agg1['files']} pairs scored, {len(agg1['skipped']['errors'])} unreadable",
             "load_average_1min: the 1-minute load average [before, after] each timing (os.getloadavg); on a "
             f"machine of {os.cpu_count()} CPUs a load above that means the figure was taken under contention"]
    if ray:
        notes.append("ray_data: Ray Data map_batches (batches of 64 pairs, plain Ray tasks) on a local Ray of "
                     f"{figures['ray_cpus']} CPUs, Ray started before the timing (ray_start_seconds); every path "
                     "gives the same aggregate (asserted)")
        notes.append("task_ray_data: the job's path (`jobs/narrative-folder.yaml`): the task loads and checks every "
                     "GT file and reads every prediction in the driver (seconds_task_load, seconds_task_predict), "
                     "then scores the stories through Ray Data into per-story rows (seconds_task_score)")
    return {"name": NAME, "figures": figures,
            "inputs": {"files": n, "workers": k, "cpus": os.cpu_count(), "ray": ray,
                       "generator": "synthetic_pair(seed=i)"},
            "load_average_1min": loads, "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "command": COMMAND + (f" --files {n}" if files else " --quick" if quick else "")
            + (f" --workers {workers}" if workers else "") + ("" if ray else " --no-ray"),
            "notes": notes, "floors": {}}


def to_markdown(result: dict[str, Any]) -> str:
    lines = [f"# {result['name']}", "", "| figure | value |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in result["figures"].items()]
    lines += ["", "| timing | load average before | after |", "|---|---|---|"]
    lines += [f"| {k} | {a} | {b} |" for k, (a, b) in result.get("load_average_1min", {}).items()]
    lines += ["", f"Rerun: `{result.get('command', COMMAND)}` (measured {result.get('when', '?')})", ""]
    return "\n".join(lines + [f"- {n}" for n in result["notes"]]) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=None, help="file pairs to generate (default 10000)")
    parser.add_argument("--workers", type=int, default=None, help="processes for the parallel run (default: CPUs)")
    parser.add_argument("--quick", action="store_true", help="1000 pairs")
    parser.add_argument("--no-ray", action="store_true", help="leave out the Ray Data run")
    parser.add_argument("--out", default=str(RESULTS), help="results folder")
    args = parser.parse_args(argv)
    result = run(args.quick, args.files, args.workers, ray=not args.no_ray)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{NAME}.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    (out / f"{NAME}.md").write_text(to_markdown(result), encoding="utf-8")
    print(to_markdown(result), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
