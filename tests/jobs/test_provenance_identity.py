"""A config's provenance names its model's identity (the response cache's: local weights by a fingerprint of their
files), so that a reader of predictions/<config>/provenance.json can tell replaced weights apart (issue 53 finding 1).
Fast: no engine (the identity reads the files, nothing loads them)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from emocaustics.core.task import Loaded, Sample
from emocaustics.jobs.startup import write_provenance
from emocaustics.models.spec import parse_llm_spec
from emocaustics.tasks.aer import TASK


def _cfg(tmp_path: Path, spec: str) -> SimpleNamespace:
    return SimpleNamespace(task=TASK, pred_dir=tmp_path / "pred", dataset=SimpleNamespace(model_dump=lambda mode: {}),
                           options=TASK.Options(), spec=spec, llm=parse_llm_spec(spec))


def _recorded(cfg: SimpleNamespace) -> dict:
    write_provenance(cfg, Loaded([Sample("q-1", {"question": "?"}, ["A"])], []))
    return json.loads((cfg.pred_dir / "provenance.json").read_text(encoding="utf-8"))


def test_replaced_weights_are_a_new_identity_in_the_provenance(tmp_path):
    weights = tmp_path / "model"
    weights.mkdir()
    (weights / "model.safetensors").write_bytes(b"a" * 4096)
    cfg = _cfg(tmp_path, f"vllm:{weights}")
    before = _recorded(cfg)
    assert before["model"] == f"vllm:{weights}"
    assert before["model_identity"] == cfg.llm.identity and "#" in before["model_identity"]
    (weights / "model.safetensors").write_bytes(b"b" * 4096)
    assert _recorded(_cfg(tmp_path, f"vllm:{weights}"))["model_identity"] != before["model_identity"]


def test_an_endpoint_is_known_by_its_provider_model_and_url_without_a_password(tmp_path):
    got = _recorded(_cfg(tmp_path, "openai:gpt-x@https://user:secret@example.test/v1"))
    assert "secret" not in json.dumps(got)
    assert got["model_identity"].startswith("openai:gpt-x@https://")
