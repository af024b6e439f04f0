"""Two run folders, table by table: are their results identical, cost and timing aside?

    python -m benchmarks.compare_runs [--rtol R] [--added COL,...] RUN_A RUN_B [RUN_A2 RUN_B2 ...]

Compares `scores.parquet`, `summary.csv` and every `tables/*.parquet` of each pair exactly (every value, every row,
rows put in one order first), without the columns that differ by nature between two runs of the same job: wall and
per-sample seconds, calls, cache hits, tokens and what they cost. Used for the before/after check of a refactoring
(issue 26: the same job on the commit before and after gives identical tables). Exit status 0 when every pair is
identical, 1 otherwise, with the first difference of each table named. `--rtol R`: floats equal within R relative
(embedding similarities were seen to differ by ~1e-8 between two runs of the same commit: the embedder's arithmetic
in another batch, not a changed prediction). `--added COL,...`: columns the later run (RUN_B) has on purpose and the
earlier one has not (a feature that adds a column, e.g. issue 43's `cluster`), named: they are set aside in B only
where A lacks them, and the verdict lists them (a column B lacks, or one A has too, is still compared).
"""

from __future__ import annotations

import sys
from pathlib import Path

import polars as pl

VOLATILE = ("llm_calls", "cache_hits", "tokens", "generated_tokens", "prompt_tokens", "seconds", "wall_s",
            "startup_s", "cost_usd", "batch_calls", "note")


def ordered(df: pl.DataFrame) -> pl.DataFrame:
    """Rows in one order: sorted by every numeric, string and boolean column, left to right."""
    keys = [c for c, t in df.schema.items() if t.is_numeric() or t in (pl.String, pl.Boolean)]
    return df.sort(keys, nulls_last=True, maintain_order=True)


def tables(run: Path) -> dict[str, pl.DataFrame]:
    def keep(df: pl.DataFrame) -> pl.DataFrame:
        return ordered(df.select([c for c in df.columns if not any(c == v or c.endswith(v) for v in VOLATILE)]))

    out = {"scores.parquet": keep(pl.read_parquet(run / "scores.parquet")),
           "summary.csv": keep(pl.read_csv(run / "summary.csv"))}
    for p in sorted((run / "tables").glob("*.parquet")):
        out[f"tables/{p.name}"] = keep(pl.read_parquet(p))
    return out


def set_aside(ta: dict[str, pl.DataFrame], tb: dict[str, pl.DataFrame], added: set[str]) -> list[str]:
    """Drop from B's tables the named added columns that A's same table lacks; the names dropped, table by table."""
    said = []
    for name in ta.keys() & tb.keys():
        extra = [c for c in tb[name].columns if c in added and c not in ta[name].columns]
        if extra:
            tb[name] = ordered(tb[name].drop(extra))  # sorted again: the set-aside column took part in the order
            said.append(f"{name}: {', '.join(extra)}")
    return sorted(said)


def differences(a: Path, b: Path, rtol: float = 0.0, added: set[str] | None = None) -> list[str]:
    ta, tb = tables(a), tables(b)
    set_aside(ta, tb, added or set())
    found = [f"{name}: only in {a}" for name in ta.keys() - tb.keys()]
    found += [f"{name}: only in {b}" for name in tb.keys() - ta.keys()]
    for name in sorted(ta.keys() & tb.keys()):
        x, y = ta[name], tb[name]
        if x.columns != y.columns:
            found.append(f"{name}: columns differ: {x.columns} vs {y.columns}")
        elif x.height != y.height:
            found.append(f"{name}: {x.height} vs {y.height} rows")
        elif not x.equals(y):
            for col in x.columns:
                if rtol and x[col].dtype.is_float():
                    u, v = x[col].fill_null(float("nan")).to_numpy(), y[col].fill_null(float("nan")).to_numpy()
                    if ((abs(u - v) <= rtol * abs(v)) | ((u != u) & (v != v))).all():
                        continue
                if not x[col].equals(y[col]):
                    row = next(i for i, (u, v) in enumerate(zip(x[col], y[col])) if u != v)
                    found.append(f"{name}: column {col} differs first at row {row}: {x[col][row]!r} vs {y[col][row]!r}")
                    break
    return found


def main(argv: list[str]) -> int:
    rtol, added = 0.0, set()
    while argv[:1] in (["--rtol"], ["--added"]):
        if argv[0] == "--rtol":
            rtol = float(argv[1])
        else:
            added = set(filter(None, argv[1].split(",")))
        argv = argv[2:]
    if len(argv) < 2 or len(argv) % 2:
        print(__doc__, file=sys.stderr)
        return 2
    bad = 0
    for a, b in zip(argv[::2], argv[1::2]):
        diff = differences(Path(a), Path(b), rtol, added)
        n = len(tables(Path(a)))
        aside = set_aside(tables(Path(a)), tables(Path(b)), added)
        print(f"{a} vs {b}: " + ("identical" if not diff else "DIFFERENT") + f" ({n} tables{f', floats to {rtol} relative' if rtol else ''}"
              + (f"; added in B, set aside: {'; '.join(aside)}" if aside else "") + ")")
        for line in diff:
            print(f"  {line}")
        bad += bool(diff)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
