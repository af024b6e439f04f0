"""Where the narrative data lives. No public JSON-v3 corpus exists, so there is nothing to fetch: the sample we wrote
ships in the repository (`datasets/narrative/`, gt/ and pred/), and a user's own collection is a folder of the same
shape named explicitly or by the environment variable."""

from __future__ import annotations

import os
from pathlib import Path

from emocaustics.core.errors import UsageError

ENV_VAR = "EMOCAUSTICS_NARRATIVE_DATA"
SAMPLE_DIR = Path(__file__).resolve().parents[3] / "datasets" / "narrative"


def locate(data: str | None) -> Path:
    """The data folder: `data` if given, else $EMOCAUSTICS_NARRATIVE_DATA, else the sample in the repository."""
    for source, value in (("data", data), (ENV_VAR, os.environ.get(ENV_VAR))):
        if value:
            path = Path(value).expanduser()
            if not path.is_dir():
                raise UsageError(f"narrative data folder {path} (from {source}) does not exist")
            return path
    if (SAMPLE_DIR / "gt").is_dir():
        return SAMPLE_DIR
    raise UsageError(f"no narrative data: pass a folder holding gt/ (and pred/) as `data`, or set {ENV_VAR}")


def gt_dir(root: Path, sub: str = "gt") -> Path:
    """root/gt when it exists, else root itself when it holds the .json files directly."""
    if (root / sub).is_dir():
        return root / sub
    if any(root.glob("*.json")):
        return root
    raise UsageError(f"{root} holds neither a {sub}/ folder nor .json ground-truth files")
