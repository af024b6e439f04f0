"""Two run folders, table by table: are their results identical, cost and timing aside?

    python -m benchmarks.compare_runs [--rtol R] RUN_A RUN_B [RUN_A2 RUN_B2 ...]

Compares `scores.parquet`, `summary.csv` and every `tables/*.parquet` of each pair exactly (every value, every row,
rows put in one order first), without the columns that differ by nature between two runs of the same job: wall and
per-sample seconds, calls, cache hits, tokens and what they cost. Used for the before/after check of a refactoring
(issue 26: the same job on the commit before and after gives identical tables). Exit status 0 when every pair is
identical, 1 otherwise, with the first difference of each table named. `--rtol R`: floats equal within R relative
(embedding similarities were seen to differ by ~1e-8 between two runs of the same commit: the embedder's arithmetic
in another batch, not a changed prediction).
"""

from __future__ import annotations

import sys
from pathlib import Path

import polars as pl

VOLATILE = ("llm_calls", "cache_hits", "tokens", "generated_tokens", "prompt_tokens", "seconds", "wall_s",
            "startup_s", "cost_usd", "batch_calls", "note")


def tables(run: Path) -> dict[str, pl.DataFrame]:
    def keep(df: pl.DataFrame) -> pl.DataFrame:
        df = df.select([c for c in df.columns if not any(c == v or c.endswith(v) for v in VOLATILE)])
        keys = [c for c, t in df.schema.items() if t.is_numeric() or t in (pl.String, pl.Boolean)]
        return df.sort(keys, nulls_last=True, maintain_order=True)

    out = {"scores.parquet": keep(pl.read_parquet(run / "scores.parquet")),
           "summary.csv": keep(pl.read_csv(run / "summary.csv"))}
    for p in sorted((run / "tables").glob("*.parquet")):
        out[f"tables/{p.name}"] = keep(pl.read_parquet(p))
    return out


def differences(a: Path, b: Path, rtol: float = 0.0) -> list[str]:
    ta, tb = tables(a), tables(b)
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
    rtol = 0.0
    if argv[:1] == ["--rtol"]:
        rtol, argv = float(argv[1]), argv[2:]
    if len(argv) < 2 or len(argv) % 2:
        print(__doc__, file=sys.stderr)
        return 2
    bad = 0
    for a, b in zip(argv[::2], argv[1::2]):
        diff = differences(Path(a), Path(b), rtol)
        n = len(tables(Path(a)))
        print(f"{a} vs {b}: " + ("identical" if not diff else "DIFFERENT") + f" ({n} tables{f', floats to {rtol} relative' if rtol else ''})")
        for line in diff:
            print(f"  {line}")
        bad += bool(diff)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
