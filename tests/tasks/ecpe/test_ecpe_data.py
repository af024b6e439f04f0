"""Locating, fetching (a small tarball built here: no network) and loading the data."""

from __future__ import annotations

import io
import json
import tarfile
import urllib.error

import pytest

from emocaustics.core.errors import UsageError
from emocaustics.tasks.ecpe import data

TOP = f"SemEval-2024_ECAC-{data.COMMIT}"


def conv(cid, pairs1):
    return {"conversation_ID": cid, "conversation": [
        {"utterance_ID": 1, "text": "I lost my job .", "speaker": "A", "emotion": "sadness"},
        {"utterance_ID": 2, "text": "Oh no !", "speaker": "B", "emotion": "sadness"}],
        "emotion-cause_pairs": pairs1}


def tarball(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, content in files.items():
            info = tarfile.TarInfo(f"{TOP}/{name}")
            info.size = len(content)
            tar.addfile(info, io.BytesIO(content))
    return buf.getvalue()


S1 = json.dumps([conv(7, [["1_sadness", "1_I lost my job ."], ["2_sadness", "1_my jobs"]])]).encode()
S2 = json.dumps([conv(7, [["1_sadness", "1"], ["2_sadness", "1"]])]).encode()


def test_unpack_keeps_test_files_sample_submission_and_licence(tmp_path):
    archive = tarball({"data/Subtask_1_test.json": S1, "data/Subtask_2_test.json": S2,
                       "data/Subtask_1_train.json": b"[]", "CodaLab/submission/Subtask_1_pred.json": b"[]",
                       "CodaLab/evaluation/evaluate.py": b"#", "LICENSE": b"GPL", "README.md": b"#"})
    dest = data.SOURCE.unpack(archive, tmp_path / "ecac")
    found = sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if p.is_file())
    assert found == ["LICENSE", "SOURCE.md", "Subtask_1_test.json", "Subtask_2_test.json",
                     "sample_submission/Subtask_1_pred.json"]
    assert data.COMMIT in (dest / "SOURCE.md").read_text() and "research use only" in (dest / "SOURCE.md").read_text()
    assert data.locate(dest) == dest


def test_unpack_without_the_test_files_is_an_error(tmp_path):
    with pytest.raises(UsageError, match="no data/Subtask_2_test.json"):
        data.SOURCE.unpack(tarball({"data/Subtask_1_test.json": S1}), tmp_path / "ecac")
    with pytest.raises(UsageError, match="not a tarball"):
        data.SOURCE.unpack(b"nope", tmp_path / "ecac")


def test_download_offline_is_a_usage_error(monkeypatch, tmp_path):
    def offline(*a, **k):
        raise urllib.error.URLError("no route to host")
    monkeypatch.setattr("urllib.request.urlopen", offline)
    with pytest.raises(UsageError, match="cannot download .*no route to host.*EMOCAUSTICS_ECAC_DATA"):
        data.fetch(tmp_path / "ecac")
    assert not (tmp_path / "ecac").exists()


def test_locate_order_explicit_env_cache(tmp_path, monkeypatch):
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "cache"
    for d in (a, b, c / "datasets" / "ecac"):
        d.mkdir(parents=True)
        (d / "Subtask_1_test.json").write_bytes(S1)
    monkeypatch.setenv("EMOCAUSTICS_CACHE", str(c))
    monkeypatch.setenv("EMOCAUSTICS_ECAC_DATA", str(b))
    assert data.locate(str(a)) == a
    assert data.locate(None) == b
    monkeypatch.delenv("EMOCAUSTICS_ECAC_DATA")
    assert data.locate(None) == c / "datasets" / "ecac"
    monkeypatch.setenv("EMOCAUSTICS_CACHE", str(tmp_path / "empty"))
    with pytest.raises(UsageError, match="EMOCAUSTICS_ECAC_DATA.*`emocaustics data fetch ecpe`"):
        data.locate(None)
    with pytest.raises(UsageError, match="no Subtask_1_test.json or Subtask_2_test.json"):
        data.locate(str(tmp_path))


def test_load_samples_hide_labels_and_report_defects(tmp_path):
    (tmp_path / "Subtask_1_test.json").write_bytes(S1)
    (tmp_path / "Subtask_2_test.json").write_bytes(S2)
    loaded = data.load(tmp_path)
    (s,) = loaded.samples
    assert s.id == "7" and s.input["conversation_ID"] == 7
    assert all(set(u) == {"utterance_ID", "speaker", "text"} for u in s.input["utterances"])  # no emotion
    assert s.target["emotions"] == ["sadness", "sadness"] and len(s.target["subtask1"]) == 2
    # "my jobs" is not in "I lost my job ." -> [0, 0], reported
    assert [(d.kind, d.where.endswith("conversation 7, pair 2")) for d in loaded.defects] == [("span_not_found", True)]
    assert loaded.info["conversations"] == 1 and loaded.info["future_cause_pairs_subtask1"] == 0
    assert data.load(tmp_path, (2,)).samples[0].target["subtask1"] is None
    with pytest.raises(UsageError, match="not in the test set: 8"):
        data.load(tmp_path, ids=[8])
