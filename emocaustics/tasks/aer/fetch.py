"""Where the SemEval-2026 Task 12 data lives: the organisers' repository tarball at a pinned commit, declared as a
`core.datasource.DataSource` (located, fetched and unpacked by the core: `emocaustics data fetch aer`).

The repository holds `sample_data/`, `dev_data/`, `test_data/` (and `train_data/` in some revisions), each with
`questions.jsonl` and usually `docs.json`. The released test gold `reference.jsonl` is NOT in the repository: put it at
`<root>/reference.jsonl` (or `<root>/test_data/reference.jsonl`) by hand. No licence is stated by the publishers, so
the data is fetched for local evaluation and never committed or redistributed.
"""

from __future__ import annotations

from emocaustics.core.datasource import DataSource

NAME = "aer"
ENV_VAR = "EMOCAUSTICS_AER_DATA"
REPO = "sooo66/semeval2026-task12-dataset"
COMMIT = "43ee9e52ecd900f80cdbc8ed360151e069e65964"
URL = f"https://codeload.github.com/{REPO}/tar.gz/{COMMIT}"
SPLIT_DIRS = {"sample": "sample_data", "dev": "dev_data", "test": "test_data", "train": "train_data"}

SOURCE = DataSource(
    name=NAME, title="SemEval-2026 Task 12 (AER) data", env_var=ENV_VAR, urls=(URL,),
    keep={"README.md": "README.md", **{f"{d}/": f"{d}/" for d in SPLIT_DIRS.values()}},
    required=("*_data/questions.jsonl",), marks=tuple(f"{d}/questions.jsonl" for d in SPLIT_DIRS.values()),
    marks_any=True, what="AER data folder", needs="<split>_data/questions.jsonl",
    notes=(f"Repository: https://github.com/{REPO}, commit {COMMIT}",
           "Licence: none stated by the publishers; local evaluation only, do not redistribute.",
           "Test gold: reference.jsonl is not in the repository; put it beside this file."))

