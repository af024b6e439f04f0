"""Every input error of the normative JSON has a name and says where (file, record, field)."""

from __future__ import annotations

import io
import json
import tarfile

import pytest

from emocaustics.core.errors import DataError, UsageError
from emocaustics.tasks.human import data as D


def test_valid_set_reads(ratings, tmp_path):
    path = tmp_path / "hits.json"
    path.write_text(json.dumps(ratings))
    hits = D.read_hits(path)
    assert len(hits.assignments) == 4 and hits.defects == []
    assert hits.metadata.score_names == ("fun", "dull", "clear") and hits.metadata.qc_scores == ("fun", "clear")
    assert hits.metadata.sorted_scores == ("fun", "dull", "clear")  # null -> file order


def test_missing_metadata(ratings):
    del ratings["metadata"]
    with pytest.raises(D.MissingMetadataKey, match="metadata"):
        D.parse_hits(ratings, file="f.json")


@pytest.mark.parametrize("key", ["score", "model", "qc-model"])
def test_missing_metadata_key(ratings, key):
    del ratings["metadata"][key]
    with pytest.raises(D.MissingMetadataKey) as err:
        D.parse_hits(ratings, file="f.json")
    assert err.value.field == f"metadata.{key}" and err.value.file == "f.json"
    assert isinstance(err.value, DataError)


def test_missing_score_attribute(ratings):
    del ratings["metadata"]["score"]["dull"]["max"]
    with pytest.raises(D.MissingMetadataKey, match="'max'"):
        D.parse_hits(ratings)


def test_optional_metadata_keys_may_be_absent(ratings):
    del ratings["metadata"]["ranking"], ratings["metadata"]["sorted_scores"]
    assert D.parse_hits(ratings).metadata.ranking is None


@pytest.mark.parametrize("value", [-1, 100.5, 1000])
def test_score_outside_range(ratings, value):
    ratings["data"][1]["result"][2]["score"]["clear"] = value
    with pytest.raises(D.ScoreOutOfRange) as err:
        D.parse_hits(ratings, file="f.json")
    assert err.value.record == "data[1] (assignment A2)" and err.value.field == "result[2].score.clear"
    assert "outside [0, 100]" in str(err.value)


def test_bounds_are_inclusive(ratings):
    ratings["data"][0]["result"][0]["score"].update(fun=0, clear=100)
    hits = D.parse_hits(ratings)
    assert hits.assignments[0].result[0].scores == {"fun": 0.0, "dull": 30.0, "clear": 100.0}


def test_system_not_in_model(ratings):
    ratings["data"][3]["result"][1]["model"] = "gamma"
    with pytest.raises(D.UnknownSystem) as err:
        D.parse_hits(ratings, file="f.json")
    assert "'gamma'" in str(err.value) and err.value.field == "result[1].model"


def test_unknown_system_in_ranking(ratings):
    ratings["metadata"]["ranking"] = ["alpha", "gamma"]
    with pytest.raises(D.UnknownSystem, match="gamma"):
        D.parse_hits(ratings)


def test_ranking_must_list_every_system(ratings):
    ratings["metadata"]["ranking"] = ["alpha"]
    with pytest.raises(D.HitsError, match="missing"):
        D.parse_hits(ratings)


def test_assignment_without_qc_is_reported_not_an_error(ratings):
    ratings["data"][0]["result"] = ratings["data"][0]["result"][:2]  # A1 loses its qc conversation
    hits = D.parse_hits(ratings, file="f.json")
    assert len(hits.defects) == 1
    d = hits.defects[0]
    assert d.kind == "no_qc_rating" and "A1" in d.where and "worker P" in d.message
    assert "other assignments" in d.message  # P still has a qc rating in A2, so P can be tested
    ratings["data"][1]["result"] = ratings["data"][1]["result"][:2]
    hits = D.parse_hits(ratings)
    assert all("cannot be tested" in x.message for x in hits.defects) and len(hits.defects) == 2


def test_duplicate_assignment_ids(ratings):
    ratings["data"][3]["assignment"] = "A2"
    with pytest.raises(D.DuplicateAssignment) as err:
        D.parse_hits(ratings, file="f.json")
    assert "data[1]" in str(err.value) and err.value.record == "data[3]"


@pytest.mark.parametrize("mutate, match", [
    (lambda r: r["data"][0].pop("worker"), "'worker'"),
    (lambda r: r["data"][0].update({"duration in seconds": "soon"}), "non-negative number"),
    (lambda r: r["data"][0]["result"][0]["score"].pop("fun"), "missing \\['fun'\\]"),
    (lambda r: r["data"][0]["result"][0]["score"].update({"extra": 3}), "unknown \\['extra'\\]"),
    (lambda r: r["data"][0]["result"][0]["score"].update({"fun": "high"}), "must be a number"),
    (lambda r: r["data"][0]["result"][0]["score"].update({"fun": True}), "must be a number"),
    (lambda r: r["data"][0].update({"result": []}), "non-empty list"),
    (lambda r: r["metadata"].update({"sorted_scores": ["fun", "nope"]}), "unknown score types"),
    (lambda r: r["metadata"].update({"model": ["alpha", "alpha"]}), "more than once"),
    (lambda r: r["metadata"].update({"model": ["alpha", "qc"]}), "also listed"),
    (lambda r: r["metadata"]["score"].update({"z": {"positive": True, "qc": True, "max": 1}}), "reserved"),
    (lambda r: [s.update(qc=False) for s in r["metadata"]["score"].values()], "no score type has qc"),
    (lambda r: r.update({"data": {}}), "'data' must be a list"),
])
def test_format_errors_name_the_place(ratings, mutate, match):
    mutate(ratings)
    with pytest.raises(D.HitsError, match=match):
        D.parse_hits(ratings, file="f.json")


def test_not_json(tmp_path):
    bad = tmp_path / "hits.json"
    bad.write_text("{oops")
    with pytest.raises(D.HitsError, match="not JSON"):
        D.read_hits(bad)
    with pytest.raises(UsageError, match="no such ratings file"):
        D.read_hits(tmp_path / "absent.json")


def test_locate_order(tmp_path, monkeypatch):
    explicit, env, cache = tmp_path / "explicit", tmp_path / "env", tmp_path / "cache"
    for p in (explicit, env):
        p.mkdir()
    monkeypatch.setenv("EMOCAUSTICS_CACHE", str(cache))
    monkeypatch.setenv(D.ENV_VAR, str(env))
    assert D.SOURCE.locate(str(explicit)) == explicit
    assert D.SOURCE.locate() == env
    monkeypatch.delenv(D.ENV_VAR)
    with pytest.raises(UsageError, match=D.ENV_VAR):
        D.SOURCE.locate()
    (cache / "datasets" / "humaneval").mkdir(parents=True)
    assert D.SOURCE.locate() == cache / "datasets" / "humaneval"
    with pytest.raises(UsageError, match="no normative JSON"):
        D.hits_path()
    with pytest.raises(UsageError, match="no such ratings file or folder"):
        D.SOURCE.locate(str(tmp_path / "nowhere"))


def test_hits_path_picks_the_file(tmp_path, ratings):
    (tmp_path / "run.json").write_text(json.dumps(ratings))
    assert D.hits_path(str(tmp_path), "run.json") == tmp_path / "run.json"
    assert D.hits_path(str(tmp_path / "run.json")) == tmp_path / "run.json"
    with pytest.raises(UsageError, match="it holds run.json"):
        D.hits_path(str(tmp_path))


def _tarball(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, content in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(content)
            tar.addfile(info, io.BytesIO(content))
    return buf.getvalue()


def test_unpack_keeps_data_and_license(tmp_path):
    top = f"Dialogue-Eval-{D.COMMIT}"
    archive = _tarball({f"{top}/LICENSE": b"MIT", f"{top}/README.md": b"readme",
                        f"{top}/data/raw_mturk_csv/FreeTopicRound1/batch.csv": b"a,b\n",
                        f"{top}/mturk_process.py": b"code", f"{top}/data/../../evil": b"x"})
    dest = tmp_path / "humaneval"
    D.SOURCE.unpack(archive, dest)
    assert (dest / "LICENSE").read_bytes() == b"MIT"
    assert (dest / "raw_mturk_csv" / "FreeTopicRound1" / "batch.csv").read_bytes() == b"a,b\n"
    assert not (dest / "mturk_process.py").exists() and not (tmp_path / "evil").exists()
    assert D.COMMIT in (dest / "SOURCE.md").read_text()


def test_unpack_rejects_a_tarball_without_data(tmp_path):
    with pytest.raises(UsageError, match="no data/"):
        D.SOURCE.unpack(_tarball({"top/README.md": b"x"}), tmp_path / "d")
    with pytest.raises(UsageError, match="not a tarball"):
        D.SOURCE.unpack(b"not a tarball", tmp_path / "d")


def test_fetch_offline_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match="cannot download"):
        D.SOURCE.fetch(tmp_path / "d", urls=("http://127.0.0.1:9/nothing.tar.gz",))
