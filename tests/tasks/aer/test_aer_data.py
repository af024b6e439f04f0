"""Loading and validating AER splits on small datasets of our own; locate and fetch."""

from __future__ import annotations

import dataclasses
import io
import json
import tarfile
from pathlib import Path

import pytest

from tasks.aer.aer_fixtures import PNG, doc, question, standard_dataset, topic, write_dataset
from emocaustics.core.errors import DataError, UsageError
from emocaustics.core.task import get_task, parse_options
from emocaustics.tasks.aer import fetch as fetch_mod
from emocaustics.tasks.aer.data import load_split


def _load(root: Path, split: str = "sample", **opts):
    task = get_task("aer")
    options = parse_options(task, {"method": "llm", **opts})
    return task.load(task.Dataset(split=split, data=str(root)), options)


def test_samples_carry_event_options_topic_and_sorted_gold(tmp_path: Path) -> None:
    loaded = _load(standard_dataset(tmp_path))
    s = {x.id: x for x in loaded.samples}
    assert [x.id for x in loaded.samples] == [f"q-{i}" for i in range(1, 7)]
    assert s["q-4"].target == ["B", "C", "D"]
    assert s["q-4"].input["topic_id"] == 2 and set(s["q-4"].input["options"]) == {"A", "B", "C", "D"}
    assert s["q-1"].meta["topic"] == "Events in town 1" and s["q-1"].meta["split"] == "sample"
    assert loaded.defects == []
    assert PNG not in json.dumps([dataclasses.asdict(x) for x in loaded.samples])  # images never enter a sample


def test_test_gold_is_joined_from_reference(tmp_path: Path) -> None:
    loaded = _load(standard_dataset(tmp_path), "test")
    assert {x.id: x.target for x in loaded.samples} == {"q-20": ["B"], "q-21": ["A", "C"]}


def test_reference_problems_are_errors(tmp_path: Path) -> None:
    write_dataset(tmp_path, {"test": ([question(20, 5, None), question(21, 5, None)], [topic(5)])},
                  reference=[{"id": "q-20", "answer": "B"}, {"id": "q-99", "answer": "A"}])
    with pytest.raises(DataError) as err:
        _load(tmp_path, "test")
    text = str(err.value)
    assert "reference.jsonl" in text and "line 2" in text and "'q-99' is not a test question" in text
    assert "1 test question(s) have no reference answer: q-21" in text


def test_topic_without_documents_is_an_error_naming_split_and_topic(tmp_path: Path) -> None:
    root = standard_dataset(tmp_path)
    with pytest.raises(DataError) as err:
        _load(root, "dev", context="full")
    text = str(err.value)
    assert "split dev" in text and "topic(s) 1 (q-10), 4 (q-11 ...), 5 (q-13)" in text and "context: none" in text
    assert "dev_data/docs.json" in text
    # context-free runs (context none, or a calibration method) load it, reporting each topic as a defect
    loaded = _load(root, "dev", context="none")
    assert [d.kind for d in loaded.defects] == ["topic-without-documents"] * 3
    task = get_task("aer")
    oracle = task.load(task.Dataset(split="dev", data=str(root)), parse_options(task, {"method": "oracle"}))
    assert len(oracle.samples) == 4


def test_a_topic_missing_from_docs_json_is_an_error_too(tmp_path: Path) -> None:
    write_dataset(tmp_path, {"sample": ([question(1, 1), question(2, 2)], [topic(1)])})
    with pytest.raises(DataError, match=r"1 topic\(s\) with 1 question\(s\) have no documents -- topic\(s\) 2 \(q-2\)"):
        _load(tmp_path)


@pytest.mark.parametrize("bad, needle", [
    (question(2, 1, option_C=None), "record line 2 (q-2), field 'option_C': option missing or empty"),
    (question(2, 1, option_D="  "), "field 'option_D': option missing or empty"),
    (question(2, 1, "A,E"), "field 'golden_answer': letter(s) outside A-D: 'E'"),
    (question(2, 1, "a"), "letter(s) outside A-D: 'a'"),
    (question(2, 1, ""), "field 'golden_answer'"),
    (question(1, 1), "field 'id': duplicate id 'q-1' (first on line 1)"),
    (question(2, "x"), "field 'topic_id': not an integer"),
    (question(2, 1, target_event=""), "field 'target_event': missing or empty"),
])
def test_each_validation_error_names_file_line_and_field(tmp_path: Path, bad, needle: str) -> None:
    write_dataset(tmp_path, {"sample": ([question(1, 1), bad], [topic(1)])})
    with pytest.raises(DataError) as err:
        _load(tmp_path, context="none")
    assert needle in str(err.value) and "sample_data/questions.jsonl" in str(err.value)


def test_malformed_line_is_an_error(tmp_path: Path) -> None:
    root = write_dataset(tmp_path, {"sample": ([question(1, 1)], [topic(1)])})
    with (root / "sample_data" / "questions.jsonl").open("a") as fh:
        fh.write("{not json\n")
    with pytest.raises(DataError, match="record line 2: not JSON"):
        _load(root)


def test_several_errors_are_listed_together(tmp_path: Path) -> None:
    write_dataset(tmp_path, {"sample": ([question(1, 1, "Z"), question(2, 1, option_A=None)], [topic(1)])})
    with pytest.raises(DataError) as err:
        _load(tmp_path)
    assert "line 1 (q-1)" in str(err.value) and "line 2 (q-2)" in str(err.value)


def test_defects_are_reported_and_nothing_dropped(tmp_path: Path) -> None:
    same = "A storm flooded the harbour."
    qs = [question(1, 1, "A,C", option_A=same, option_C=same.upper()),  # repeated option (case and spaces ignored)
          question(2, 1, "C,A"),  # gold not in sorted form: read as A,C
          question(3, 1, "B")]
    repeat = dict(question(3, 1, "B"), id="q-4")  # same event and options as q-3
    docs = [doc(1, 1), doc(2, 1, content=""), doc(3, 1, content="", snippet="")]
    write_dataset(tmp_path, {"sample": ([*qs, repeat], [topic(1, docs)])})
    loaded = _load(tmp_path)
    assert len(loaded.samples) == 4
    kinds = sorted(d.kind for d in loaded.defects)
    assert kinds == ["document-without-content", "document-without-content", "gold-not-normalised",
                     "repeated-option", "repeated-question"]
    by_kind = {d.kind: d for d in loaded.defects}
    assert "options A, C have the same text" in by_kind["repeated-option"].message
    assert "q-1" in by_kind["repeated-option"].where
    assert "same target event and options as q-3" in by_kind["repeated-question"].message
    assert next(s for s in loaded.samples if s.id == "q-2").target == ["A", "C"]
    empty = [d for d in loaded.defects if d.kind == "document-without-content"]
    assert "topic 1, document 1 (d-1-2)" in empty[0].where and "snippet stands in" in empty[0].message
    assert "nothing to show" in empty[1].message


def test_ids_and_max_samples_select(tmp_path: Path) -> None:
    root = standard_dataset(tmp_path)
    task = get_task("aer")
    opts = parse_options(task, {"method": "oracle"})
    assert [s.id for s in task.load(task.Dataset(split="sample", data=str(root), max_samples=2), opts).samples] == [
        "q-1", "q-2"]
    picked = task.load(task.Dataset(split="sample", data=str(root), ids=["q-5", "q-1"]), opts).samples
    assert [s.id for s in picked] == ["q-5", "q-1"]
    with pytest.raises(UsageError, match="no question"):
        task.load(task.Dataset(split="sample", data=str(root), ids=["q-77"]), opts)


def test_unknown_or_absent_split(tmp_path: Path) -> None:
    root = standard_dataset(tmp_path)
    with pytest.raises(UsageError, match="split 'train' is not there"):
        load_split(root, "train")
    with pytest.raises(UsageError, match="unknown AER split"):
        load_split(root, "validation")


# -- locate and fetch -------------------------------------------------------------------------------------------------
def test_locate_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    explicit = standard_dataset(tmp_path / "explicit")
    env = standard_dataset(tmp_path / "env")
    cache = tmp_path / "cache"
    monkeypatch.setenv("EMOCAUSTICS_CACHE", str(cache))
    monkeypatch.setenv(fetch_mod.ENV_VAR, str(env))
    assert fetch_mod.SOURCE.locate(explicit) == explicit.resolve()
    assert fetch_mod.SOURCE.locate(None) == env.resolve()
    monkeypatch.delenv(fetch_mod.ENV_VAR)
    with pytest.raises(UsageError, match="`emocaustics data fetch aer`.*looked in"):
        fetch_mod.SOURCE.locate(None)
    standard_dataset(cache / "datasets" / "aer")
    assert fetch_mod.SOURCE.locate(None) == (cache / "datasets" / "aer").resolve()
    with pytest.raises(UsageError, match="nowhere: no such AER data folder"):
        fetch_mod.SOURCE.locate(tmp_path / "nowhere")
    with pytest.raises(UsageError, match="not the AER data folder: no <split>_data/questions.jsonl in it"):
        fetch_mod.SOURCE.locate(tmp_path)


def _tarball(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        link = tarfile.TarInfo("repo-abc/sample_data/evil")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        tar.addfile(link)
    return buf.getvalue()


def test_fetch_unpacks_a_github_tarball(tmp_path: Path) -> None:
    q = (json.dumps(question(1, 1)) + "\n").encode()
    archive = tmp_path / "repo.tar.gz"
    archive.write_bytes(_tarball({
        "repo-abc/README.md": b"# readme",
        "repo-abc/sample_data/questions.jsonl": q,
        "repo-abc/sample_data/docs.json": json.dumps([topic(1)]).encode(),
        "repo-abc/dev_data/questions.jsonl": q,
        "repo-abc/other/notes.txt": b"not taken",
        "repo-abc/../escape.txt": b"never",
    }))
    dest = tmp_path / "cache" / "aer"
    out = fetch_mod.SOURCE.fetch(dest, urls=(archive.as_uri(),))
    assert out == dest
    assert sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file()) == [
        "README.md", "SOURCE.md", "dev_data/questions.jsonl", "sample_data/docs.json", "sample_data/questions.jsonl"]
    assert not (tmp_path / "escape.txt").exists()
    assert fetch_mod.COMMIT in (dest / "SOURCE.md").read_text()
    assert [s.id for s in _load(dest).samples] == ["q-1"]


def test_fetch_offline_and_bad_archives_are_usage_errors(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="cannot download .* set EMOCAUSTICS_AER_DATA"):
        fetch_mod.SOURCE.fetch(tmp_path / "d", urls=("http://127.0.0.1:9/nothing.tar.gz",))
    junk = tmp_path / "junk.tar.gz"
    junk.write_bytes(b"not a tarball")
    with pytest.raises(UsageError, match="not a tarball"):
        fetch_mod.SOURCE.fetch(tmp_path / "d", urls=(junk.as_uri(),))
    empty = tmp_path / "empty.tar.gz"
    empty.write_bytes(_tarball({"repo-abc/README.md": b"x"}))
    with pytest.raises(UsageError, match=r"has no \*_data/questions.jsonl"):
        fetch_mod.SOURCE.fetch(tmp_path / "d", urls=(empty.as_uri(),))
    assert fetch_mod.URL == ("https://codeload.github.com/sooo66/semeval2026-task12-dataset/tar.gz/"
                             "43ee9e52ecd900f80cdbc8ed360151e069e65964")
