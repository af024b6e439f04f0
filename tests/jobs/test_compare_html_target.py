"""Issue 53 item 16: `compare A B --html FILE` ended in a traceback (NotADirectoryError) after the whole comparison;
--html takes a folder, and a file there or above it is one line before any work (the runs are not even read)."""

from __future__ import annotations

from pathlib import Path

import pytest

from emocaustics.cli import main


@pytest.mark.parametrize("target", ["page.html", "page.html/deeper"])
def test_compare_html_naming_a_file_is_one_line(tmp_path: Path, capsys, target: str) -> None:
    (tmp_path / "page.html").write_text("", encoding="utf-8")
    assert main(["compare", str(tmp_path / "no-run-a"), str(tmp_path / "no-run-b"), "--html",
                 str(tmp_path / target)]) == 2
    err = capsys.readouterr().err
    assert err == (f"emocaustics: error: --html {tmp_path / target}: {tmp_path / 'page.html'} is a file; --html "
                   "takes a folder (it writes DIR/compare.html and the viewer in DIR/view/)\n")
