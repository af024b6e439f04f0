"""scale_bench's stand-in vectors are the same in every process: its prompts, and so its critical path, do not move
with PYTHONHASHSEED (issue 31: the longest dialogue alone took 444 to 453 simulated seconds from run to run)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CODE = ("import json; from benchmarks.scale_bench import pseudo_embeddings as f; "
        "v = f(['我今天很开心', '他说工作太难了', 'ok']); print(json.dumps([[round(float(x), 6) for x in r] for r in v]))")


def _vectors(seed: str) -> list[list[float]]:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    out = subprocess.run([sys.executable, "-c", CODE], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def test_pseudo_embeddings_do_not_depend_on_the_string_hash_seed():
    a, b = _vectors("1"), _vectors("2")
    assert a == b
    assert len(a) == 3 and all(len(r) == 32 for r in a)
    assert [round(sum(x * x for x in r), 4) for r in a] == [1.0, 1.0, 1.0]  # unit length
    assert sum(1 for x in a[2] if x) == 1  # 'ok': one bigram, one bucket
