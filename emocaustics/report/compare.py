"""`emocaustics compare RUN_A RUN_B ...`: paired tests between like-for-like configs of different runs.

Configs of different runs are paired by label (the same label in both runs: the same task, method, model and options)
or, when the caller gives a mapping (`--pair A B`, `Run.compare(..., pairs={A: B})`), by that mapping only: the config
labelled A of a run with the config labelled B of a later run given. Testing every config against every config (3 x 3
= 9 pairs, mirrored ones included) spent the Holm family on pairs nobody asked about; a config with no partner is
listed, not tested. A pair is tested on the samples both configs scored (`stats.config_stats`: approximate
randomisation, paired bootstrap, Wilcoxon), and where both runs recorded what each sample was
(`predictions/<config>/provenance.json` fingerprints of its input and of its gold), a sample id only pairs with the same
input and gold (another subset that reuses the id, or a corrected gold answer, is not the same sample); a config whose
provenance predates the gold's fingerprint is named as paired without that check. The tests resample the task's clusters (`cluster_by`, e.g. AER's topics)
where every run recorded the same unit in scores.parquet, else each sample is its own cluster. Holm's correction runs
across the pairs tested (all tasks), leaving out pairs with a calibration row as the run's own tables do
(`tables.in_holm_family`). A config is named by its run (the shortest tail of the run folder's path that tells the
runs apart, at least `<job>/<timestamp>`) and its label.
"""

from __future__ import annotations

from pathlib import Path
from collections.abc import Iterable, Mapping
from typing import NamedTuple

import polars as pl

from emocaustics.core.errors import UsageError, shorten
from emocaustics.report.tables import check_scores, in_holm_family
from emocaustics.scoring.headline import HEADLINE, scored_rows

PAIR_COLUMNS = ("task", "run_a", "config_a", "run_b", "config_b", "n_common", "clusters", "cluster_by", "n_only_a",
                "n_only_b", "score_a", "score_b", "diff", "diff_low", "diff_high", "p_randomisation", "p_bootstrap",
                "p_wilcoxon", "family", "p_holm", "significant")


class Comparison(NamedTuple):
    configs: pl.DataFrame  # run, config, task, kind and the headline: samples, score, failures (`scoring.headline.HEADLINE`)
    pairs: pl.DataFrame  # PAIR_COLUMNS, one row per pair of configs matched (by label or mapping) with common samples
    unpaired: int  # pairs matched that share no sample (not tested)
    unmatched: tuple[str, ...] = ()  # "<run>: <label>" of each config with no partner (not tested)
    unchecked: tuple[str, ...] = ()  # "<run>: <label>" of each config whose provenance records no gold fingerprints


def run_names(run_dirs: list[Path], command: str = "compare") -> list[str]:
    """The shortest path tails (at least two parts, `<job>/<timestamp>`) that tell the run folders apart; `command`
    (compare, view) names the command in an error."""
    resolved = [d.resolve() for d in run_dirs]
    if len(set(resolved)) < len(resolved):
        twice = next(str(d) for d, r in zip(run_dirs, resolved) if resolved.count(r) > 1)
        raise UsageError(f"{command}: run folder {twice} is given twice; {command} different runs")
    depth = 2
    while True:
        names = ["/".join(r.parts[-depth:]) for r in resolved]
        if len(set(names)) == len(names) or depth >= max(len(r.parts) for r in resolved):
            return names
        depth += 1


def _fingerprints(run_dir: Path, label: str) -> tuple[dict[str, str], ...]:
    """(input, gold) fingerprints by sample id of a config's provenance.json; empty where it records none."""
    from emocaustics.core.provenance import read

    try:
        rec = read(run_dir / "predictions" / label) or {}
    except UsageError:
        rec = {}
    return tuple({str(k): str(v) for k, v in (rec.get(key) or {}).items()} for key in ("samples", "gold"))


def load_run(run_dir: Path, name: str) -> pl.DataFrame:
    """A run's per-sample scores as (run, config, task, kind, sample_id, fingerprint, gold, score, failed, cluster,
    cluster_by): `fingerprint` and `gold` the sample's input and gold fingerprints where the config's provenance
    records them."""
    path = run_dir / "scores.parquet"
    if not path.is_file():
        raise UsageError(f"{run_dir}: no scores.parquet (a finished run folder holds one); compare needs each run's "
                         "per-sample scores")
    scores = pl.read_parquet(path)
    check_scores(scores, str(path))
    scores = scored_rows(scores).select("run", "task", "kind", pl.col("sample_id").cast(pl.Utf8), "score", "failed",
                                        pl.col("cluster").cast(pl.Utf8), "cluster_by")
    frames = []
    for label in scores["run"].unique(maintain_order=True).to_list():
        rows = scores.filter(pl.col("run") == label)
        frames.append(rows.with_columns(
            pl.col("sample_id").replace_strict(prints, default=None, return_dtype=pl.Utf8).alias(column)
            for column, prints in zip(("fingerprint", "gold"), _fingerprints(run_dir, label))))
    return pl.concat(frames).select(pl.lit(name).alias("run"), pl.col("run").alias("config"), "task", "kind",
                                    "sample_id", "fingerprint", "gold", "score", "failed", "cluster", "cluster_by")


Pairs = Mapping[str, str] | Iterable[tuple[str, str]]


class Paired(NamedTuple):
    names: list[str]  # each run's name (`run_names`), in the order given
    rows: pl.DataFrame  # load_run's rows of every run, with `item` (what pairs a sample) and `key` ("<run>\t<label>")
    configs: pl.DataFrame  # run, config, task, kind, samples, score, failures
    matched: list[tuple[str, str]]  # `match`'s pairs of keys


def paired(run_dirs: list[Path], pairs: Pairs | None = None, command: str = "compare") -> Paired:
    """The runs' per-sample rows and the pairs of configs `match` makes: what `compare_runs` tests and what the
    cross-run viewer (`report.across`, `command` view) lines up."""
    names = run_names(run_dirs, command)
    rows = pl.concat([load_run(d, n) for d, n in zip(run_dirs, names)])
    # a sample pairs by id, input and gold where every config of the task recorded each, else by what all recorded
    checked = rows.group_by("task").agg(pl.col(c).is_not_null().all().alias(f"{c}_checked") for c in ("fingerprint",
                                                                                                        "gold"))
    rows = rows.join(checked, on="task").with_columns(
        pl.concat_str("sample_id", *(pl.when(pl.col(f"{c}_checked")).then("#" + pl.col(c)) for c in ("fingerprint",
                                                                                                    "gold")),
                      ignore_nulls=True).alias("item"),
        (pl.col("run") + "\t" + pl.col("config")).alias("key"))
    configs = (rows.group_by("run", "config", maintain_order=True)
               .agg(pl.first("task"), pl.first("kind"), *(e.alias(k) for k, e in HEADLINE.items())))
    return Paired(names, rows, configs, match(configs, names, pairs, command))


def compare_runs(run_dirs: list[Path], pairs: Pairs | None = None) -> Comparison:
    """Paired tests between the configs of different runs that `match` pairs (by label, or by `pairs`: label in an
    earlier run -> label in a later one, a mapping or (a, b) tuples) and that share samples, Holm across them."""
    from emocaustics.stats import config_stats, holm_family

    names, rows, configs, matched = paired(run_dirs, pairs)
    paired_keys = {k for pair in matched for k in pair}
    unmatched = tuple(f"{r}: {c}" for r, c in configs.select("run", "config").iter_rows()
                      if f"{r}\t{c}" not in paired_keys)
    unchecked = tuple(f"{r}: {c}" for r, c in rows.filter(pl.col("gold").is_null() & pl.col("key").is_in(paired_keys))
                      .select("run", "config").unique(maintain_order=True).iter_rows())
    task_of = {f"{r}\t{c}": t for r, c, t in configs.select("run", "config", "task").iter_rows()}
    tables, unpaired = [], 0
    for task in rows["task"].unique(maintain_order=True).to_list():
        of_task = rows.filter(pl.col("task") == task)
        items = {k: set(v) for k, v in of_task.group_by("key", maintain_order=True).agg("item").iter_rows()}
        wanted = [(a, b) for a, b in matched if task_of[a] == task]
        shared = [(a, b) for a, b in wanted if items[a] & items[b]]
        unpaired += len(wanted) - len(shared)
        if not shared:
            continue
        units = of_task["cluster_by"].unique().to_list()
        unit = units[0] if len(units) == 1 else "sample"  # runs that disagree on the unit: no clusters
        per_item = of_task.select(pl.col("key").alias("config"), "item", pl.col("score").alias("value"),
                                  (pl.col("item") if unit == "sample" else pl.col("cluster")).alias("cluster"))
        got = config_stats(per_item, only=shared).pairs
        tables.append(got.with_columns(pl.lit(task).alias("task"), pl.lit(unit).alias("cluster_by"),
                                       _common_mean(per_item, shared, 0).alias("score_a"),
                                       _common_mean(per_item, shared, 1).alias("score_b")))
    if not tables:
        return Comparison(configs, pl.DataFrame(schema={c: pl.Utf8 for c in PAIR_COLUMNS}), unpaired, unmatched,
                          unchecked)
    tested = pl.concat(tables)
    kinds = dict(rows.group_by("key").agg(pl.first("kind")).iter_rows())
    tested = holm_family(tested, in_holm_family(tested, kinds))
    tested = tested.with_columns(
        pl.col("config_a").str.split_exact("\t", 1).struct.rename_fields(["run_a", "label_a"]).alias("a"),
        pl.col("config_b").str.split_exact("\t", 1).struct.rename_fields(["run_b", "label_b"]).alias("b"),
    ).unnest("a", "b").drop("config_a", "config_b").rename({"label_a": "config_a", "label_b": "config_b"})
    return Comparison(configs, tested.select(PAIR_COLUMNS), unpaired, unmatched, unchecked)


def match(configs: pl.DataFrame, runs: list[str], pairs: Pairs | None = None, command: str = "compare"
          ) -> list[tuple[str, str]]:
    """The pairs of configs to test, as ("<run>\t<label>", ...) keys, each once (run given earlier first): for
    every two runs, the configs of the same label, or with `pairs`, the config labelled A of the earlier run and the
    one labelled B of the later. A label of the mapping no run has, or a pair across tasks, is a UsageError."""
    labels = {run: dict(configs.filter(pl.col("run") == run).select("config", "task").iter_rows()) for run in runs}
    named = None if pairs is None else list(dict.fromkeys(
        (a, b) for a, b in (pairs.items() if isinstance(pairs, Mapping) else pairs)))
    everywhere = {label: task for of_run in labels.values() for label, task in of_run.items()}
    for a, b in named or []:
        missing = [x for x in (a, b) if x not in everywhere]
        if missing:
            known = sorted(everywhere)
            raise UsageError(f"{command}: pair {shorten(a)} -> {shorten(b)}: no run has a config labelled "
                             f"{shorten(missing[0])} (labels: {', '.join(known[:12])}"
                             f"{' ...' if len(known) > 12 else ''})")
        if everywhere[a] != everywhere[b]:
            raise UsageError(f"{command}: pair {a} -> {b}: a config of task {everywhere[a]} with one of task "
                             f"{everywhere[b]}; only configs of one task are compared")
    out = []
    for i, run_a in enumerate(runs):
        for run_b in runs[i + 1:]:
            wanted = named if named is not None else [(c, c) for c in labels[run_a]]
            out += [(f"{run_a}\t{a}", f"{run_b}\t{b}") for a, b in wanted
                    if a in labels[run_a] and b in labels[run_b] and labels[run_a][a] == labels[run_b][b]]
    if named and not out:
        raise UsageError(f"{command}: no pair named holds a config of an earlier run and one of a later run ("
                         f"{', '.join(f'{a} -> {b}' for a, b in named)}; runs in the order given: {', '.join(runs)})")
    return out


def _common_mean(per_item: pl.DataFrame, pairs: list[tuple[str, str]], side: int) -> pl.Series:
    """Each pair's side-`side` mean over the items both sides scored (what `diff` is the difference of)."""
    scored = per_item.drop_nulls("value")
    of = lambda config: scored.filter(pl.col("config") == config)  # noqa: E731
    return pl.Series([of(pair[side]).join(of(pair[1 - side]).select("item"), on="item")["value"].mean()
                      for pair in pairs], dtype=pl.Float64)


def describe(result: Comparison, alpha: float = 0.05) -> str:
    """The terminal text: each pair's scores on their common samples, difference with its interval, p-values and
    verdict, then what the family was."""
    from emocaustics.report.tables import to_markdown

    pairs = result.pairs
    unmatched = (f"Samples paired without checking their gold (a provenance.json written before it recorded the gold): "
                 f"{'; '.join(result.unchecked)}.\n" if result.unchecked else "")
    unmatched += (f"Not compared, no config of the same label in another run (pair them with --pair A B): "
                  f"{'; '.join(result.unmatched)}.\n" if result.unmatched else "")
    if not pairs.height:
        return ("No two configs of different runs are matched and share samples: nothing to compare"
                + (f" ({result.unpaired} matched pairs share no sample)." if result.unpaired else ".")
                + "\n" + unmatched)
    family = pairs.filter(pl.col("family") == "configs")
    shown = pairs.select(
        "task", "run_a", "config_a", "run_b", "config_b", pl.col("n_common").alias("samples"),
        pl.format("{} ({})", "clusters", "cluster_by").alias("clusters"), "score_a", "score_b", "diff",
        pl.format("[{}, {}]", pl.col("diff_low").round(4), pl.col("diff_high").round(4)).alias("diff_ci"),
        pl.col("p_randomisation").alias("p"), "p_holm",
        pl.when(pl.col("family") != "configs")
        .then(pl.when(pl.col("significant")).then(pl.lit("calibration: p < 0.05 unadjusted"))
              .otherwise(pl.lit("calibration: p >= 0.05 unadjusted")))
        .when(pl.col("significant")).then(pl.lit("significant")).otherwise(pl.lit("NOT significant"))
        .alias("verdict"))
    text = to_markdown(shown)
    text += (f"\nPaired approximate randomisation on the samples both configs scored, one sign flip per cluster "
             f"(`clusters`: how many, and the unit; the interval resamples them too); Holm over the {family.height} "
             f"pairs of matched configs compared (all tasks): {int(family['significant'].sum())} significant at "
             f"{alpha}.")
    if family.height < pairs.height:
        text += (f" {pairs.height - family.height} pairs with a calibration row (oracle, baseline) are outside the "
                 "family: their p is unadjusted.")
    if result.unpaired:
        text += f" {result.unpaired} matched pairs share no sample: not compared."
    return text + "\n" + unmatched
