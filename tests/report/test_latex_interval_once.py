"""summary.tex: the summary's interval column (`columns.with_ci`) is made once, and the columns are chosen from that
frame (latex_columns made it a second time)."""

from __future__ import annotations

import polars as pl

from emocaustics.report import latex


def test_the_interval_column_is_made_once(monkeypatch):
    made = []
    real = latex.with_ci

    def counting(summary, *args, **kwargs):
        made.append(summary.height)
        return real(summary, *args, **kwargs)

    monkeypatch.setattr(latex, "with_ci", counting)
    summary = pl.DataFrame({"run": ["x"], "task": ["t"], "method": ["m"], "samples": [3], "score": [0.5],
                            "ci_low": [0.25], "ci_high": [0.75], "micro_score": [0.5], "failures": [0]})
    tex = latex.summary_latex(summary)
    assert "[0.2500, 0.7500]" in tex
    assert made == [1]
