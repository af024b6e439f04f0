"""Issue 53 (16): the viewer across runs' score tolerance is never negative (a tolerance of -1 made every two equal
scores "differ"). The page's own handler, run under node with a stand-in state; no browser."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

APP = Path(__file__).resolve().parents[2] / "emocaustics" / "view" / "static" / "app.js"


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
@pytest.mark.parametrize(("typed", "kept"), [("-1", 0), ("0.25", 0.25), ("", 0), ("x", 0), ("2", 2)])
def test_the_tolerance_typed_is_kept_at_zero_or_more(typed, kept):
    handler = re.search(r'id: "tol".*?oninput: (\(e\) => \{.*?\})', APP.read_text(encoding="utf-8"), re.S).group(1)
    script = (f"const st = {{tol: 0}}; const render = () => {{}}; ({handler})({{target: {{value: {json.dumps(typed)}}}}});"
              "process.stdout.write(JSON.stringify(st.tol));")
    assert json.loads(subprocess.run(["node", "-e", script], capture_output=True, text=True, check=True).stdout) == kept
