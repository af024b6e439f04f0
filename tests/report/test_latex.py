"""`emocaustics report RUN --latex`: the summary table as LaTeX (summary.tex), its path printed.

No TeX installation is assumed: the checks are structural (one row per config, the same number of cells in every
row, LaTeX's special characters escaped, braces and environments balanced, every column defined in the caption).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import polars as pl
import pytest

from emocaustics.cli import main
from emocaustics.report.latex import escape, summary_latex
from emocaustics.report.tables import SCORE_COLUMNS, write_tables

AMP = re.compile(r"(?<!\\)&")  # a column separator, not an escaped \&


def _rows(run: str, scores: list[float], *, weights=(1.0, 3.0), failed=()) -> list[dict]:
    return [{"run": run, "task": "narrative", "method": "llm", "model": "m_1", "kind": "model",
             "sample_id": f"s{i}", "weight": w, "score": s, "failed": i in failed, "status": "ok", "reason": None,
             "llm_calls": 2, "cache_hits": 0, "prompt_tokens": 10, "generated_tokens": 5, "seconds": 1.0,
             "c_spans": s / 2}
            for i, (s, w) in enumerate(zip(scores, weights))]


@pytest.fixture
def run_dir(tmp_path) -> Path:
    scores = pl.DataFrame(_rows("narrative_llm_m_1_window=6", [0.5, 0.25])
                          + _rows("odd & 50%_{x}#$~^\\", [0.0, 1.0], failed=(0,)),
                          schema_overrides=SCORE_COLUMNS)
    out = tmp_path / "job" / "20260101-000000"
    out.mkdir(parents=True)
    write_tables(out, scores)
    return out


def _body(tex: str) -> list[str]:
    lines = tex.splitlines()
    return lines[lines.index("\\midrule") + 1:lines.index("\\bottomrule")]


def test_report_latex_writes_summary_tex_and_prints_its_path(run_dir, capsys):
    assert main(["report", str(run_dir), "--latex"]) == 0
    printed = capsys.readouterr().out.split()
    tex_path = run_dir / "summary.tex"
    assert printed == [str(run_dir / "report.html"), str(tex_path)]
    tex = tex_path.read_text(encoding="utf-8")
    header = tex.splitlines()[tex.splitlines().index("\\toprule") + 1]
    spec = re.search(r"\\begin\{tabular\}\{([lrc]+)\}", tex).group(1)
    n_cols = len(spec)
    assert len(AMP.findall(header)) == n_cols - 1
    body = _body(tex)
    assert len(body) == 2 and all(len(AMP.findall(r)) == n_cols - 1 and r.endswith("\\\\") for r in body)
    # the columns: task left out (one task), micro_score kept (weights differ), cost columns left out
    assert header.startswith("run & method & model & samples & score & 95\\,\\% CI & micro score & failures")
    assert "llm" in header or "tokens" not in header
    # values: the first config's mean 0.375 with its interval, special characters escaped
    assert body[0].startswith("narrative\\_llm\\_m\\_1\\_window=6 & llm & m\\_1 & 2 & 0.3750 & [")
    assert body[1].startswith(r"odd \& 50\%\_\{x\}\#\$\textasciitilde{}\textasciicircum{}\textbackslash{} & ")
    # balanced environments and braces (escaped braces do not count)
    assert tex.count("\\begin{") == tex.count("\\end{") == 2
    plain = re.sub(r"\\[{}]", "", tex)
    assert plain.count("{") == plain.count("}")
    caption = re.search(r"\\caption\{(.*)\}", tex).group(1)
    for name in ("run", "method", "model", "samples", "score", "95\\,\\% CI", "micro score", "failures"):
        assert f"{name}: " in caption, name
    assert "\\label{tab:job-20260101-000000}" in tex and "booktabs" in tex.splitlines()[0]


def test_latex_needs_a_finished_run(tmp_path, capsys):
    from emocaustics.core.errors import UsageError
    from emocaustics.report.latex import write_latex

    assert main(["report", str(tmp_path), "--latex"]) != 0  # not a run folder: a named error, no traceback
    assert "emocaustics: error:" in capsys.readouterr().err and not (tmp_path / "summary.tex").exists()
    with pytest.raises(UsageError, match="no summary.csv"):
        write_latex(tmp_path)


def test_escape_and_same_micro_dropped():
    assert escape("a_b & c%") == r"a\_b \& c\%"
    summary = pl.DataFrame({"run": ["x"], "task": ["t"], "method": ["m"], "samples": [3], "score": [0.5],
                            "ci_low": [0.25], "ci_high": [0.75], "micro_score": [0.5], "failures": [0]})
    tex = summary_latex(summary)
    assert "micro score" not in tex and "0.5000 & [0.2500, 0.7500] & 0" in tex


@pytest.mark.skipif(shutil.which("pdflatex") is None, reason="no pdflatex here: the structural checks above stand")
def test_summary_tex_compiles(run_dir, tmp_path):
    main(["report", str(run_dir), "--latex"])
    doc = tmp_path / "doc.tex"
    doc.write_text("\\documentclass{article}\\usepackage{booktabs}\\begin{document}\\input{"
                   f"{(run_dir / 'summary.tex').as_posix()}}}\\end{{document}}\n", encoding="utf-8")
    proc = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", doc.name], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-2000:]
