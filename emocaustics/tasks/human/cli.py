"""`emocaustics human ...`: the human-assessment tool's two steps (its data: `emocaustics data fetch human`).

    emocaustics human process HITS.json --out DIR [--ranking a,b,...] [--qc-threshold 0.05]
        (HITS.json is one ratings file: a folder is refused, exit status 2, naming the .json files it holds)
    emocaustics human process BATCH.csv --metadata HITS.json --out DIR   (a raw MTurk batch-results CSV)
    emocaustics human replicate RUN1_DIR RUN2_DIR --out DIR
"""

from __future__ import annotations

import argparse
from pathlib import Path

PAPER_R = 0.969  # Ji et al. (2022): round 1 vs round 2, overall z, Pearson


def register(subparsers: argparse._SubParsersAction) -> None:
    human = subparsers.add_parser("human", help="human assessment of dialogue systems (ACL 2022 method)",
                                  description=__doc__.splitlines()[0])
    sub = human.add_subparsers(dest="human_command", required=True)
    p = sub.add_parser("process", help="z-scores, quality control, pass rates, system scores, significance")
    p.add_argument("hits", help="ratings file in the normative JSON format (hits_data.json) or a raw MTurk CSV; "
                                "a folder is refused "
                                "with the list of its .json files to name instead")
    p.add_argument("--metadata", help="for a raw MTurk batch-results .csv: a JSON holding its metadata (score "
                                      "types in question order, models, qc-model, ranking), e.g. a hits_data JSON")
    p.add_argument("--out", required=True, help="output folder (tables, plots, summary.json)")
    p.add_argument("--ranking", help="comma-separated system order overriding metadata.ranking")
    p.add_argument("--qc-threshold", type=float, default=0.05, help="QC pass iff p < this (default 0.05)")
    p.set_defaults(func=cmd_process)
    r = sub.add_parser("replicate", help="self-replication: correlations between two processed runs")
    r.add_argument("run1", help="output folder of `human process` for run 1 (its order is kept)")
    r.add_argument("run2", help="output folder of `human process` for run 2")
    r.add_argument("--out", required=True, help="output folder for the correlation tables")
    r.set_defaults(func=cmd_replicate)


def cmd_process(args: argparse.Namespace) -> int:
    from emocaustics.core.errors import UsageError
    from emocaustics.tasks.human.mturk import read_ratings
    from emocaustics.tasks.human.method import process
    from emocaustics.tasks.human.outputs import write_process

    hits = read_ratings(args.hits, args.metadata)
    ranking = [m.strip() for m in args.ranking.split(",") if m.strip()] if args.ranking else None
    if not 0 < args.qc_threshold <= 1:
        raise UsageError(f"--qc-threshold must be in (0, 1], got {args.qc_threshold}")
    try:
        result = process(hits, ranking=ranking, threshold=args.qc_threshold)
    except ValueError as exc:
        raise UsageError(f"{args.hits}: {exc}") from None
    out = Path(args.out)
    paths = write_process(result, out, source=str(args.hits))
    for d in result.defects:
        print(f"defect {d.kind}: {d.where}: {d.message}")
    rates = {r[""]: r for r in result.passrate.iter_rows(named=True)}
    for level in ("HIT", "Worker"):
        r = rates[level]
        print(f"{level} pass rate: {r['passed']}/{r['total']} = {r['passrate']:.4f}")
    print("systems (passing workers), ranked" + (" as given" if ranking or result.metadata.ranking else " by z") + ":")
    for row in result.scores["passed"][0].iter_rows(named=True):
        print(f"  {row['model']:<20} z = {row['z']: .4f}  N = {row['N']}")
    print(f"wrote {len(paths)} files to {out}")
    return 0


def cmd_replicate(args: argparse.Namespace) -> int:
    from emocaustics.core.errors import UsageError
    from emocaustics.tasks.human.outputs import read_system_tables, write_replication
    from emocaustics.tasks.human.significance import self_replication

    z1, raw1 = read_system_tables(Path(args.run1))
    z2, raw2 = read_system_tables(Path(args.run2))
    try:
        corr_z, corr_raw = self_replication(z1, z2), self_replication(raw1, raw2)
    except ValueError as exc:
        raise UsageError(f"{args.run1} vs {args.run2}: {exc}") from None
    paths = write_replication(corr_z, corr_raw, Path(args.out), run1=args.run1, run2=args.run2)
    with_pl_print(corr_z, "z-scores")
    with_pl_print(corr_raw, "raw scores")
    r = corr_z.filter(corr_z.get_column("") == "pearson").get_column("z")[0] if "z" in corr_z.columns else None
    if r is not None:
        print(f"overall z, Pearson r between the runs: {r:.3f} (the paper reports r = {PAPER_R} for its free-topic "
              "round 1 vs round 2)")
    print(f"wrote {len(paths)} files to {args.out}")
    return 0


def with_pl_print(df: object, title: str) -> None:
    import polars as pl

    with pl.Config(tbl_cols=-1, tbl_width_chars=200, float_precision=4, tbl_hide_dataframe_shape=True):
        print(f"correlations between the runs, {title}:")
        print(df)
