"""The narrative section of the run report: precision, recall and F1 per component and config, rebuilt from the
job's per-sample table (scores.parquet: each story's counts, `aggregate.prf_columns`) alone, so that
`emocaustics report RUN_DIR` shows it too.

The counts are pooled over the config's stories (failed stories included: their GT items count as missed) and turned
into P/R/F1 by `aggregate.prf_from_counts`, the function behind `score narrative`'s table: the two agree.
"""

from __future__ import annotations

import polars as pl

from emocaustics.core.htmltable import table
from emocaustics.tasks.narrative.aggregate import PRF_COUNTS, PRF_UNIT, prf_columns, prf_from_counts

NOTE = ("Micro precision, recall and F1: each component's counts pooled over the config's stories (a failed story's "
        "ground-truth items count as missed). Events have recall only: a predicted event absent from the ground truth "
        "is not an error (the ground-truth-incomplete rule). Actions (field accuracy) and spans (boundary similarity) "
        "have no precision or recall; their scores are in the components table.")


def prf_table(scores: pl.DataFrame) -> pl.DataFrame:
    """One row per (config, component): what is counted, precision, recall, F1 (null where not measured)."""
    columns = prf_columns()
    schema = {"run": pl.Utf8, "component": pl.Utf8, "of": pl.Utf8, "precision": pl.Float64, "recall": pl.Float64,
              "f1": pl.Float64}
    if not set(columns) <= set(scores.columns):
        return pl.DataFrame(schema=schema)
    rows = []
    for (run,), part in scores.group_by("run", maintain_order=True):
        sums = part.select(pl.col(list(columns)).sum(), pl.col(list(columns)).is_not_null().any().name.suffix("_any"))
        got = sums.to_dicts()[0]
        for c, keys in PRF_COUNTS.items():
            cols = [f"n_{c}_{k}" for k in keys]
            if not any(got[f"{col}_any"] for col in cols):  # no story of this config scored the component
                continue
            rows.append({"run": str(run), "component": c, "of": PRF_UNIT[c],
                         **prf_from_counts(c, {k: got[f"n_{c}_{k}"] for k in keys})})
    return pl.DataFrame(rows, schema=schema)


def sections(summary: pl.DataFrame, scores: pl.DataFrame) -> list[tuple[str, str]]:
    prf = prf_table(scores)
    if not prf.height:
        return []
    return [("Narrative: precision, recall and F1 per component",
             f"<p class='note'>{NOTE}</p><div id='narrative-prf'>{table(prf)}</div>")]
