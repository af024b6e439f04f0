"""Scoring benchmark: the whole dataset's sextuples and chains (oracle predictions) with the default embedder.

Reports per task: dialogues, texts embedded, distinct texts, seconds (in-process path and Ray Data path), the text
occurrences the reference's call pattern would embed, and the speed-up against embedding each comparison separately
(the reference calls the embedder once per comparison group: 8 texts per sextuple candidate, [gt event + predicted
events] per GT event, [gt reason + predicted reasons] per GT emotion), measured in the same run on a sample of
dialogues, for the oracle and for the baseline predictor (whose texts are not identical to the ground truth).

    python -m benchmarks.score_bench [--quick]      # --quick: paper-100 instead of all 400
Writes benchmarks/results/score_bench.json and .md. Floor: whole-dataset scoring under 600 s on a 2-core machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"
FLOOR_SECONDS = 600.0
SAMPLE = 5  # dialogues timed with per-comparison embedding calls


def reference_groups(task: str, dialogues: list, preds: dict[int, Any]) -> list[list[str]]:
    """The embedder calls the reference implementation would make (each a list of texts)."""
    groups: list[list[str]] = []
    for d in dialogues:
        p = preds[d.id]
        if task == "sextuple":
            for u, cands in zip(d.utterances, p):
                gt = u.gt
                for c in cands or [None]:
                    groups.append([(getattr(x, f) if x else "") or " " for f in ("target", "aspect", "opinion",
                                   "rationale") for x in (gt, c)])
        else:
            for h, evs in (d.chains or {}).items():
                pev = p.get(h, ())
                for ev in evs:
                    if pev:
                        groups.append([ev.event] + [e.event for e in pev])
                        for em in ev.emotions:  # the reference compares against the best event's emotions
                            groups.append([em.reason] + [e.reason for e in pev[0].emotions])
    return [g for g in groups if g]


def per_call_seconds(embedder: Any, groups: list[list[str]]) -> float:
    t0 = time.perf_counter()
    for g in groups:
        embedder.encode(g)
    return time.perf_counter() - t0


def run(quick: bool = False) -> dict:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from emocaustics.tasks.emocaustics.data.subsets import resolve
    from emocaustics.models.embedders import make_embedder
    from emocaustics.tasks.emocaustics.score.engine import ascore
    from emocaustics.tasks.emocaustics.score.plan import score_with_ray
    from emocaustics.tasks.emocaustics.score.predictors import predict

    subset = "paper-100" if quick else "all"
    dialogues, _ = resolve(subset, None)
    emb = make_embedder("minilm")
    t0 = time.perf_counter()
    emb.encode(["预热"])  # type: ignore[attr-defined]
    load_s = time.perf_counter() - t0
    figures: dict[str, Any] = {"dialogues": len(dialogues), "model_load_seconds": round(load_s, 2)}
    total_local = 0.0
    for task in ("sextuple", "emotion"):
        preds = predict("oracle", task, dialogues)
        t0 = time.perf_counter()
        res = asyncio.run(ascore(task, dialogues, preds, embedder=emb))
        secs = time.perf_counter() - t0
        total_local += secs
        ref_texts = sum(len(g) for g in reference_groups(task, dialogues, preds))
        figures[task] = {"score": res.summary["score"], "items": res.items.height,
                         "texts_requested": res.summary["texts_requested"],
                         "distinct_texts_embedded": res.summary["distinct_texts"],
                         "reference_texts": ref_texts, "seconds_in_process": round(secs, 2)}
        # per-comparison embedding vs ours on the same sample, oracle and baseline predictions
        sample = dialogues[:SAMPLE]
        for who in ("oracle", "baseline"):
            sp = predict(who, task, sample)
            groups = reference_groups(task, sample, sp)
            per_call = per_call_seconds(emb, groups)
            t0 = time.perf_counter()
            r = asyncio.run(ascore(task, sample, sp, embedder=emb))
            ours = time.perf_counter() - t0
            figures[task][f"sample_{who}"] = {
                "dialogues": len(sample), "embed_calls_per_comparison": len(groups),
                "texts_per_comparison": sum(len(g) for g in groups), "distinct_texts": r.summary["distinct_texts"],
                "seconds_per_comparison": round(per_call, 3), "seconds_batched": round(ours, 3),
                "speedup": round(per_call / ours, 1) if ours > 0 else None}
        s = figures[task]["sample_oracle"]
        sample_ref = s["texts_per_comparison"]
        figures[task]["per_comparison_seconds_extrapolated"] = (
            round(s["seconds_per_comparison"] * ref_texts / sample_ref, 1) if sample_ref else None)
    # the Ray Data path on the whole set (one local Ray for both tasks; start-up measured apart)
    import ray

    t0 = time.perf_counter()
    ray.init(num_cpus=2, object_store_memory=300_000_000, include_dashboard=False, log_to_driver=False)
    figures["ray_start_seconds"] = round(time.perf_counter() - t0, 2)
    total_ray = 0.0
    try:
        for task in ("sextuple", "emotion"):
            preds = predict("oracle", task, dialogues)
            t0 = time.perf_counter()
            res = score_with_ray(task, dialogues, preds, embedder="minilm")
            secs = time.perf_counter() - t0
            total_ray += secs
            figures[task]["seconds_ray"] = round(secs, 2)
            figures[task]["ray_score"] = res.summary["score"]
            figures[task]["ray_distinct_texts"] = res.summary["distinct_texts"]
    finally:
        ray.shutdown()
    figures["total_seconds_in_process"] = round(total_local, 2)
    figures["total_seconds_ray"] = round(total_ray, 2)
    worst = max(total_local, total_ray)
    return {
        "name": "score_bench",
        "inputs": {"subset": subset, "embedder": "minilm", "judge": "none", "predictions": "oracle",
                   "sample_dialogues": SAMPLE},
        "figures": figures,
        "notes": [
            "identical texts are never embedded (cosine 1 by definition): oracle sextuples embed nothing, so the "
            "baseline sample shows the speed-up on texts that differ",
            "texts_requested = 2 x distinct (pred, gt) pairs our scorer compares; reference_texts = what the "
            "reference's one-call-per-comparison pattern embeds",
            "2 shared CPU cores: other processes may run at the same time; timings are wall clock",
        ],
        "floors": {"whole_dataset_seconds": {"value": round(worst, 2), "floor": FLOOR_SECONDS,
                                              "ok": worst < FLOOR_SECONDS}},
    }


def to_markdown(out: dict) -> str:
    f = out["figures"]
    lines = [f"# score_bench ({out['inputs']['subset']}, {f['dialogues']} dialogues, oracle, minilm)", "",
             "| task | texts requested | distinct embedded | reference texts | in-process s | Ray s | sample speed-up oracle | sample speed-up baseline |",
             "|---|---|---|---|---|---|---|---|"]
    for t in ("sextuple", "emotion"):
        x = f[t]
        lines.append(f"| {t} | {x['texts_requested']} | {x['distinct_texts_embedded']} | {x['reference_texts']} | "
                     f"{x['seconds_in_process']} | {x['seconds_ray']} | {x['sample_oracle']['speedup']}x | "
                     f"{x['sample_baseline']['speedup']}x |")
    lines += ["", f"model load {f['model_load_seconds']} s, Ray start {f['ray_start_seconds']} s; floor: "
              f"{out['floors']['whole_dataset_seconds']}"]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    out = run(args.quick)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "score_bench.json").write_text(json.dumps(out, ensure_ascii=False, indent=1), encoding="utf-8")
    (RESULTS / "score_bench.md").write_text(to_markdown(out), encoding="utf-8")
    print(to_markdown(out))


if __name__ == "__main__":
    main()
