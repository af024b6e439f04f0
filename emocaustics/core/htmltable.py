"""A DataFrame as an HTML table, as report.html draws its tables and every task's report section draws its own
(below the report and the tasks alike: a task's section does not reach up into the report to draw one)."""

from __future__ import annotations

import html
import re

import polars as pl

# Decimal places of float columns that four (a score's) would overstate: seconds on a wall clock ("18.8", not
# "18.8000"). Used by every table the report writes (Markdown, HTML).
DECIMALS = {"wall_s": 1}
# Text columns kept on one line (an interval "[0.1000, 0.3000]" reads badly on two).
NOWRAP = frozenset({"ci"})


def breakable(text: str) -> str:
    """Escaped text that may wrap after `_`, `-`, `=`, `:` and `/` (config labels and column names are long words
    made of parts: they wrap between the parts, never inside one)."""
    return re.sub(r"([_\-=:/])", r"\1<wbr>", html.escape(text))


def table(df: pl.DataFrame, row_class: str | None = None, table_id: str | None = None) -> str:
    head = "".join(f"<th>{breakable(c)}</th>" for c in df.columns if c != row_class)
    rows = []
    for row in df.iter_rows(named=True):
        cls = f' class="{html.escape(str(row[row_class]))}"' if row_class else ""
        cells = []
        for col, value in row.items():
            if col == row_class:
                continue
            if isinstance(value, float):
                cells.append(f"<td>{value:.{DECIMALS.get(col, 4)}f}</td>")
            elif isinstance(value, int) and not isinstance(value, bool):
                cells.append(f"<td>{value}</td>")
            else:
                cls_td = "t n" if col in NOWRAP else "t"
                cells.append(f'<td class="{cls_td}">{breakable("" if value is None else str(value))}</td>')
        rows.append(f"<tr{cls}>{''.join(cells)}</tr>")
    ident = f' id="{html.escape(table_id)}"' if table_id else ""
    return f"<table{ident}><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
