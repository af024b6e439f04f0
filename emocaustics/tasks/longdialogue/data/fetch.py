"""Where the EmoCaustics data is published: the `datasets/` folder of the authors' repository at a pinned commit,
declared as a `core.datasource.DataSource` (located, fetched and unpacked by the core: `emocaustics data fetch
emocaustics`, or the task name `sextuple` / `emotion`)."""

from __future__ import annotations

from emocaustics.core.datasource import DataSource

REPO = "zRzRzRzRzRzRzR/EmoCaustics"
COMMIT = "0f9ba5e6f1c2b87be216d9098cc9aa2c8b09694d"
URL = f"https://codeload.github.com/{REPO}/tar.gz/{COMMIT}"
ENV_VAR = "EMOCAUSTICS_DATA"

SOURCE = DataSource(
    name="emocaustics", title="EmoCaustics dataset", env_var=ENV_VAR, urls=(URL,),
    keep={"datasets/chat/": "chat/", "datasets/emo/": "emo/", "LICENSE": "LICENSE"},  # LICENSE travels with it
    required=("datasets/chat/*", "datasets/emo/*"), marks=("chat", "emo"), what="EmoCaustics dataset folder",
    needs="chat/ and emo/ subfolders",
    notes=(f"Repository: https://github.com/{REPO}, folder `datasets/`, commit {COMMIT}",
           "License: Apache-2.0 (LICENSE beside this note); keep both with the data."))
