"""Spec scoring embeds its texts in one order whatever Python's string hash seed: the pairs are gathered in sets, and
an embedder's batches (their padding) change the last float32 bits of a cosine, so an order taken from a set made
two runs of the same job differ in items.parquet (paper-100 baseline: ~50 event cosines, run to run)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

SCRIPT = r"""
import asyncio, json, zlib
import numpy as np
from emocaustics.tasks.longdialogue.data.schema import Dialogue, Emotion, Event, Sextuple, Utterance
from emocaustics.tasks.longdialogue.score.engine import ascore
from emocaustics.tasks.longdialogue.score.plan import EmbedStage

class Recording:
    name = "recording"
    def __init__(self):
        self.calls = []
    async def embed(self, texts):
        self.calls.append(list(texts))
        return np.stack([np.eye(64, dtype=np.float32)[zlib.crc32(t.encode()) % 64] + 0.5 for t in texts])

gt = {"1": tuple(Event(f"event {k}", tuple(Emotion("joy", f"reason {k}.{m}", ("2",), "2") for m in range(2)))
                 for k in range(4))}
pred = {"1": tuple(Event(f"guess {k}", tuple(Emotion("joy", f"why {k}.{m}", ("2",), "2") for m in range(2)))
                   for k in range(4))}
utts = tuple(Utterance(k, f"s{k}", "1", Sextuple(f"t{k}", f"a{k}", f"o{k}", "positive", f"r{k}")) for k in range(6))
cands = [[Sextuple(f"pt{k}", f"pa{k}", f"po{k}", "positive", f"pr{k}")] for k in range(6)]
d = Dialogue(id=1, utterances=utts, chat_files=("chat_1.json",), chains=gt)
out = {}
for task, p in (("emotion", pred), ("sextuple", cands)):
    rec = Recording()
    asyncio.run(ascore(task, [d], {1: p}, embedder=rec))
    out[task] = rec.calls
    stage = EmbedStage.__new__(EmbedStage)  # the Ray path's embed stage, called here without Ray
    stage.task, stage.ok, stage.encode = task, {1: (d, p)}, lambda texts: asyncio.run(rec.embed(texts))
    stage({"dialogue": [1]})
    out[f"{task} on ray"] = rec.calls[-1]
print(json.dumps(out))
"""


def _order(seed: str) -> dict:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    done = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_spec_embed_order_does_not_depend_on_the_hash_seed():
    first, second = _order("1"), _order("2")
    assert all(first[k] for k in ("emotion", "sextuple", "emotion on ray", "sextuple on ray"))  # texts embedded
    assert first == second
