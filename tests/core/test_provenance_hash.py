"""The dataset hash a prediction folder records (`provenance.json`'s `dataset_hash`): the hash folders written before
hold (sha256 of the sorted (id, fingerprint) pairs as JSON, 16 hex digits), whatever the order of the samples, so a
stored record and a new one of the same selection agree."""

from __future__ import annotations

import hashlib
import json
from types import SimpleNamespace

from emocaustics.core import provenance
from emocaustics.core.task import Options, Sample


class _Task:
    name, prompts_version = "t", None
    data = SimpleNamespace(fingerprint=lambda s: f"fp-{s.input}")


def _record(samples: list[Sample]) -> dict:
    loaded = SimpleNamespace(samples=samples, info={})
    return provenance.record(_Task(), loaded, dataset={}, options=Options(method="m"), model=None)


def test_the_dataset_hash_is_the_stored_format_and_ignores_sample_order() -> None:
    samples = [Sample("b", "二"), Sample("a", 'x"1'), Sample("c", 3)]
    rec = _record(samples)
    stored = json.dumps(sorted(rec["samples"].items()), ensure_ascii=False)  # what earlier folders hashed
    assert rec["dataset_hash"] == hashlib.sha256(stored.encode("utf-8")).hexdigest()[:16]
    assert _record(samples[::-1])["dataset_hash"] == rec["dataset_hash"]
    assert _record([Sample("b", "三"), *samples[1:]])["dataset_hash"] != rec["dataset_hash"]
