"""The summary table as LaTeX (`emocaustics report RUN --latex` -> RUN/summary.tex), ready for a paper.

A booktabs `table` of the main columns of the run's summary: what ran (a column per grid axis: each option that
varies between the job's configs, `report/columns.py`), samples, the score with its 95 % bootstrap interval, failures. Columns that carry nothing for a paper are left out: the cost columns (llm_calls, tokens, wall_s:
they depend on the cache and the machine), `task` when the job has one task, `micro_score` when it equals `score` in
every row, and any column empty in every row. The caption defines every column kept. Needs `\\usepackage{booktabs}`.
"""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl

from emocaustics.core.errors import UsageError
from emocaustics.report.columns import (COLUMN_DOCS, PREFIX, option_columns, place_config_columns, present,
                                        same_as_score, with_ci)

# With, after what ran, the grid's axes and the tasks' own option columns (`columns.place_config_columns`).
LATEX_COLUMNS = ("run", "task", "method", "model", "samples", "score", "ci", "micro_score", "failures")
HEADERS = {"ci": "95\\,\\% CI", "micro_score": "micro score"}
_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{",
            "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}


def escape(text: str) -> str:
    """Plain text as LaTeX source (every character LaTeX treats specially is escaped)."""
    return "".join(_SPECIAL.get(ch, ch) for ch in text)


def _header(column: str) -> str:
    """A column's LaTeX header: a grid axis by its option's name (`opt:context` -> context)."""
    return HEADERS.get(column, escape(column.removeprefix(PREFIX)))


def _cell(value: object, digits: int) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return "" if value != value else f"{value:.{digits}f}"
    return escape(str(value))


def latex_columns(df: pl.DataFrame) -> list[str]:
    """The columns kept of the summary with its interval (`columns.with_ci`; see the module docstring), with a column
    per grid axis (`opt:<key>`) after the model and the tasks' own option columns after those."""
    cols = place_config_columns(df, present(df, LATEX_COLUMNS))
    if "task" in cols and df["task"].n_unique() == 1:
        cols.remove("task")
    if "micro_score" in cols and same_as_score(df):
        cols.remove("micro_score")
    return cols


def summary_latex(summary: pl.DataFrame, label: str = "emocaustics-summary", digits: int = 4) -> str:
    df = with_ci(summary, digits)
    cols = latex_columns(df)
    numeric = {c for c in cols if df.schema[c].is_numeric()}
    spec = "".join("r" if c in numeric else ("c" if c == "ci" else "l") for c in cols)
    lines = [
        "% Summary table written by `emocaustics report RUN --latex`; needs \\usepackage{booktabs}.",
        "\\begin{table}[t]",
        "\\centering",
        "\\small",
        f"\\begin{{tabular}}{{{spec}}}",
        "\\toprule",
        " & ".join(_header(c) for c in cols) + " \\\\",
        "\\midrule",
    ]
    for row in df.select(cols).iter_rows():
        lines.append(" & ".join(_cell(v, digits) for v in row) + " \\\\")
    docs = {**option_columns(summary), **COLUMN_DOCS}
    defined = "; ".join(f"{_header(c)}: {escape(docs[c])}" for c in cols if c in docs)
    axes = [_header(c) for c in cols if c.startswith(PREFIX)]
    if axes:
        defined += f"; {', '.join(axes)}: the options that vary between the configs (the grid's axes)"
    safe_label = re.sub(r"[^A-Za-z0-9:.-]", "-", label)  # a \\label takes no escapes
    lines += ["\\bottomrule", "\\end{tabular}", f"\\caption{{{defined}.}}", f"\\label{{tab:{safe_label}}}",
              "\\end{table}"]
    return "\n".join(lines) + "\n"


def write_latex(run_dir: Path) -> Path:
    """RUN/summary.tex from RUN/summary.csv (`emocaustics report --latex` writes the tables again first, so an old
    folder's summary gains the intervals: the statistics are computed once, there); returns its path."""
    if not (run_dir / "summary.csv").exists():
        raise UsageError(f"{run_dir}: no summary.csv (is this a finished run directory?)")
    summary = pl.read_csv(run_dir / "summary.csv")
    label = f"{run_dir.parent.name}-{run_dir.name}"
    out = run_dir / "summary.tex"
    out.write_text(summary_latex(summary, label=label), encoding="utf-8")
    return out
