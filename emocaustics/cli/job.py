"""`emocaustics run | report | compare`: jobs, reports and side-by-side comparisons."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from emocaustics.core.clihelp import DefaultsFormatter, exit_epilog
from emocaustics.core.errors import UsageError


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "run", help="run a job (its configs and grid) end to end: predictions, scores, report",
        description="Run a job spec: every config's predictions, scores, summary tables and report land in one run "
                    "folder. Nothing starts until every dataset, model and endpoint was checked.",
        formatter_class=DefaultsFormatter,
        epilog=exit_epilog(usage="usage error (bad spec, a run folder that is not free, a failed pre-flight check: "
                                 "nothing was run)"))
    p.add_argument("job", help="job spec YAML (see jobs/)")
    p.add_argument("--out", default=None, help="run folder (default: <output>/<job name>/<timestamp>)")
    run_flags(p)
    p.set_defaults(func=_run)

    p = subparsers.add_parser("tasks", help="list the evaluation tasks, their methods and options")
    p.add_argument("--json", action="store_true", help="print the list as JSON")
    p.set_defaults(func=_tasks)

    p = subparsers.add_parser("report", help="write a run folder's report.html again (e.g. after an upgrade)")
    p.add_argument("run_dir", help="a finished run folder (it holds scores.parquet)")
    p.add_argument("--latex", action="store_true", help="also write the summary table as LaTeX (summary.tex)")
    p.set_defaults(func=_report)

    p = subparsers.add_parser(
        "compare", help="say which differences between configs are significant: within one run, or between the "
                        "configs of different runs scored on the same samples",
        description="One run: its summary and the paired tests between its configs (significance.csv). Several "
                    "runs: their summaries side by side, then a paired test between the configs of different runs "
                    "that have the same label (or that --pair names), on the samples both scored, Holm-corrected "
                    "across the pairs tested; a config with no partner is listed, not tested; pairs with a "
                    "calibration row (oracle, baseline) are shown unadjusted, outside the family. A config is named "
                    "by its run (<job>/<timestamp>) and its label.")
    p.add_argument("run_dirs", nargs="+", help="finished run folders")
    p.add_argument("--pair", nargs=2, action="append", metavar=("LABEL_A", "LABEL_B"), default=None,
                   help="test the config labelled LABEL_A of a run against the one labelled LABEL_B of a later run "
                        "given, instead of pairing by label (repeatable: only the pairs named are tested)")
    p.add_argument("--out", help="also write the pairs compared (their tests and verdicts) as CSV here")
    p.add_argument("--html", metavar="DIR", help="several runs: also write DIR/compare.html, each pair linked to its "
                                                 "samples side by side in the viewer across runs written beside it "
                                                 "(DIR/view/), and each sample scored differently to its page")
    p.set_defaults(func=_compare)


def run_flags(p: argparse.ArgumentParser) -> None:
    """The flags `run` and `eval` share (after each one's --out)."""
    p.add_argument("--resume", action="store_true",
                   help="continue the run in --out (default: the latest run of the same job or eval): samples "
                        "already predicted are skipped; the folder must hold a run of the same job")
    p.add_argument("--retry-limits", action="store_true",
                   help="with --resume: solve again the samples that failed over a token or time limit (a resume "
                        "keeps them as failures otherwise)")
    p.add_argument("--force", action="store_true",
                   help="start afresh in a folder that holds a run: the old folder is moved aside to "
                        "<folder>.replaced-<timestamp> (never deleted)")
    p.add_argument("--dry-run", action="store_true",
                   help="print the configs, samples, estimated LLM calls and tokens, models and where outputs and "
                        "the cache go, problems first; start nothing, write nothing; exit 2 when it finds a problem")
    p.add_argument("--allow-failures", action="store_true",
                   help="exit 0 even when some samples failed (they are still listed in the summary)")
    p.add_argument("--ray-address", default=None,
                   help="Ray cluster to join (default: the job's ray.address, else a local Ray when one is needed)")
    p.add_argument("--no-cache", dest="cache", action="store_const", const="off", default="on",
                   help="ask the models again: neither read nor add to the response cache (the job's `cache: off`)")


def _run(args: argparse.Namespace) -> int:
    from emocaustics.core.errors import SamplesFailed
    from emocaustics.jobs.runner import run_job
    from emocaustics.jobs.spec import load_job

    resume_or_force(args)
    job = load_job(args.job)
    if args.cache == "off":
        job = job.model_copy(update={"cache": "off"})
    if args.dry_run:
        return dry_run(job, args)
    run_dir = run_job(job, out=args.out, resume=args.resume, force=args.force, ray_address=args.ray_address,
                      job_file=args.job, retry_limits=args.retry_limits)  # a Ctrl-C: `interrupted`, from `cli.main`
    failed, total = _failed_samples(run_dir)
    if failed and not args.allow_failures:
        raise SamplesFailed(failed, total, f"see {run_dir / 'summary.md'}")
    return 0


def interrupted(args: argparse.Namespace) -> None:
    """A Ctrl-C of `run` or `eval` (`cli.main` calls it): the run.json of each run it had going says `interrupted`
    (`rundir.interrupted`) and the command that continues it is printed, before the CLI's own line and status 130."""
    from emocaustics.jobs.rundir import interrupted as stopped
    from emocaustics.jobs.runner import resume_command

    for c in stopped():
        again = resume_words(args, resume_command(getattr(args, "job", None), c.run_dir))
        print(f"{c.run_dir}: interrupted, kept; continue it with: {again}", file=sys.stderr, flush=True)


def resume_words(args: argparse.Namespace, text: str) -> str:
    """`text` naming the command that continues a run (`runner.resume_command`) in the words of the verb given: an
    eval has no job file, it is continued by its own command."""
    if getattr(args, "command", None) != "eval":  # (an args object without one: a test's, or an old caller)
        return text
    return text.replace("emocaustics run JOB.yaml", "emocaustics eval <the same arguments>")


def resume_or_force(args: argparse.Namespace) -> None:
    if args.resume and args.force:
        raise UsageError("--resume and --force exclude each other: continue the run, or move it aside")


def dry_run(job: Any, args: argparse.Namespace) -> int:
    """`--dry-run` of `run` and `eval`: the plan printed, problems first; start nothing, write nothing."""
    from emocaustics.jobs.runner import plan_job

    plan = plan_job(job, out=args.out, resume=args.resume, retry_limits=args.retry_limits)
    print(plan.text)
    plan.check()  # a problem found: exit 2, so that a dry run can gate a CI job
    return 0


def _failed_samples(run_dir: Path) -> tuple[int, int]:
    import polars as pl

    scores = pl.read_parquet(run_dir / "scores.parquet", columns=["failed"])
    return int(scores["failed"].sum()), scores.height


def _report(args: argparse.Namespace) -> int:
    from emocaustics.jobs.runner import rebuild_report

    print(rebuild_report(Path(args.run_dir)))
    if args.latex:
        from emocaustics.report.latex import write_latex

        print(write_latex(Path(args.run_dir)))
    return 0


def _compare(args: argparse.Namespace) -> int:
    import polars as pl

    from emocaustics.report.columns import option_columns
    from emocaustics.report.tables import compare, to_markdown

    dirs = [Path(d) for d in args.run_dirs]
    if args.pair and len(dirs) < 2:
        raise UsageError("compare --pair pairs the configs of different runs: give two run folders or more")
    html = Path(args.html) if args.html else None  # a folder; a file there (or above) is said before any work
    if html is not None and (file := next((p for p in (html, *html.parents) if p.is_file()), None)) is not None:
        raise UsageError(f"--html {html}: {file} is a file; --html takes a folder (it writes DIR/compare.html and "
                         "the viewer in DIR/view/)")
    try:
        table = compare(dirs)
    except FileNotFoundError as exc:
        raise UsageError(str(exc)) from None
    wanted = ("run_dir", "run", "task", "method", "model", *option_columns(table), "samples", "score", "ci_low",
              "ci_high", "clusters", "cluster_by", "micro_score", "failures")  # clusters: what the interval resampled
    print(to_markdown(table.select([c for c in wanted if c in table.columns])))
    if len(dirs) > 1:  # the configs of different runs, tested against each other on their common samples
        from emocaustics.report.compare import compare_runs, describe

        result = compare_runs(dirs, args.pair)
        print(describe(result), end="")
        if args.out:
            result.pairs.write_csv(args.out)
        if args.html:
            from emocaustics.report.viewlinks import compare_page

            print(f"side by side: {compare_page(dirs, result, Path(args.html), args.pair).resolve().as_uri()}")
        return 0
    if args.html:
        raise UsageError("compare --html links the configs of different runs side by side: give two run folders or "
                         "more (one run's report.html links its own viewer)")
    path = dirs[0] / "significance.csv"  # one run: which differences between its configs are significant
    pairs = pl.read_csv(path) if path.exists() else pl.DataFrame()
    for r in pairs.iter_rows(named=True):
        head = (f"{dirs[0]}: {r['config_a']} vs {r['config_b']}: diff {r['diff']:+.4f} over {r['n_common']} common "
                "samples")
        if r.get("p_holm") is None:  # a pair with a calibration row: outside Holm's family
            print(f"{head}, p {r['p_randomisation']:.4f} unadjusted (calibration row, not in Holm's family)")
        else:
            print(f"{head}, p_holm {r['p_holm']:.4f} -> {'significant' if r['significant'] else 'NOT significant'}")
    if args.out:
        pairs.write_csv(args.out)
    return 0


def _tasks(args: argparse.Namespace) -> int:
    import json

    from emocaustics.core.task import get_task, task_names

    listing = []
    for name in task_names():
        task = get_task(name)
        options = {k: {"default": None if f.is_required() else f.get_default(call_default_factory=True),
                       "type": str(f.annotation).replace("typing.", "")}
                   for k, f in task.Options.model_fields.items() if k != "method"}
        dataset = {k: (None if f.is_required() else f.get_default(call_default_factory=True))
                   for k, f in task.Dataset.model_fields.items()}
        listing.append({"task": name, "description": task.description, "methods": list(task.methods.solver),
                        "calibration": list(task.methods.calibration), "options": options, "dataset": dataset})
    if args.json:
        print(json.dumps(listing, indent=1, default=str))
        return 0
    for t in listing:
        print(f"{t['task']}: {t['description']}")
        print(f"  methods: {', '.join(t['methods']) or '(none: scoring only)'}; calibration: "
              f"{', '.join(t['calibration']) or '-'}")
        shown = ", ".join(f"{k}={v['default']}" for k, v in t["options"].items()) or "-"
        print(f"  options: {shown}")
        print(f"  dataset: {', '.join(f'{k}={v}' for k, v in t['dataset'].items())}")
    return 0
