"""A job's start-up loads the embedder in a background thread while the main thread builds the smoke model with
transformers (jobs/startup.py): the two first imports of transformers' lazy module must not run at once (issue 53,
finding 9: `make demo` died with "cannot import name 'PreTrainedTokenizerFast' from 'transformers'")."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

# A fresh interpreter, so that both imports are really the first: the main thread starts the smoke build once the
# embedder's thread is inside its import of transformers (the moment the race hit, every time before the fix).
SCRIPT = """
import sys, threading, time
from pathlib import Path
from emocaustics.models.embedders import make_embedder
from emocaustics.models.smoke import build_smoke_model

embedder = make_embedder("minilm")
loader = threading.Thread(target=embedder._load)
loader.start()
while "transformers" not in sys.modules and loader.is_alive():
    time.sleep(0.001)
build_smoke_model(Path(sys.argv[1]) / "model", sample_dir=Path(sys.argv[1]) / "no-samples")
loader.join()
print("vectors", embedder.encode(["both loaded"]).shape)
"""


def test_the_embedders_load_and_the_smoke_build_at_once(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path)], capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 0, done.stderr[-2000:]
    assert "vectors (1, 384)" in done.stdout
    assert (tmp_path / "model" / "smoke.json").is_file()
