"""The workbench's decisions (issue 53's mutation area `workbench`: ui/forms.py, ui/paths.py, ui/server.py), fast:
the verbs each form runs, word for word as the command line takes them; each refusal of a path, with what it says;
which run folders are listed; and the server's routes and answers (the server in this process on a free port, its
jobs a stand-in that records what it was asked to start: no worker process)."""

from __future__ import annotations

import http.client
import json
import os
import threading
from pathlib import Path

import pytest

from emocaustics.core.errors import UsageError
from emocaustics.ui import server as server_module
from emocaustics.ui.forms import plan
from emocaustics.ui.jobs import Job
from emocaustics.ui.paths import Folders, Refused
from emocaustics.ui.server import Workbench, make_server, run_folders


@pytest.fixture
def folders(tmp_path: Path) -> Folders:
    root = tmp_path / "root"
    (root / "data").mkdir(parents=True)
    for name in ("pred.jsonl", "hits.json", "meta.csv", "r1", "r2"):
        (root / name).write_text("x", encoding="utf-8")
    return Folders(root, tmp_path / "out")


def _plan(kind: str, form: dict, folders: Folders):
    job = folders.out / "jobs" / "0001"
    return job, *plan(kind, form, folders, job)


def test_human_process_with_its_metadata(folders):
    job, title, steps = _plan("human-process", {"hits": "hits.json", "metadata": " meta.csv "}, folders)
    root = folders.root
    assert title == "human process hits.json"
    assert steps == [("process", ["human", "process", str(root / "hits.json"), "--out", str(job / "run"),
                                  "--metadata", str(root / "meta.csv")])]


def test_human_replicate(folders):
    job, title, steps = _plan("human-replicate", {"run1": "r1", "run2": "r2"}, folders)
    assert title == "human replicate r1 r2"
    assert steps == [("replicate", ["human", "replicate", str(folders.root / "r1"), str(folders.root / "r2"),
                                    "--out", str(job / "replication")])]


def test_aer_validates_then_scores_on_its_split(folders):
    pred, data = str(folders.root / "pred.jsonl"), str(folders.root / "data")
    _, title, steps = _plan("submission", {"task": "aer", "pred": "pred.jsonl", "split": "test", "data": "data"},
                            folders)
    assert title == "aer: pred.jsonl on test"
    assert steps == [("validate", ["aer", "validate", pred, "--split", "test", "--data", data, "--json"]),
                     ("score", ["score", "aer", "--pred", pred, "--split", "test", "--data", data, "--json",
                                "--allow-failures"])]
    _, title, steps = _plan("submission", {"task": "aer", "pred": "pred.jsonl"}, folders)
    assert title == "aer: pred.jsonl on dev" and steps[0][1] == ["aer", "validate", pred, "--split", "dev", "--json"]
    with pytest.raises(UsageError, match=r"^split 'x': one of sample, dev, test, train$"):
        _plan("submission", {"task": "aer", "pred": "pred.jsonl", "split": "x"}, folders)


def test_ecpe_and_narrative(folders):
    pred, data = str(folders.root / "pred.jsonl"), str(folders.root / "data")
    job, title, steps = _plan("submission", {"task": "ecpe", "pred": "pred.jsonl"}, folders)
    assert title == "ecpe: pred.jsonl"
    assert steps == [("validate", ["ecpe", "validate", pred, "--json"]),
                     ("score", ["score", "ecpe", "--pred", pred, "--json", "--allow-failures"])]
    job, title, steps = _plan("submission", {"task": "narrative", "pred": "pred.jsonl", "data": "data"}, folders)
    assert title == "narrative: pred.jsonl"
    assert steps == [("score", ["score", "narrative", "--pred", pred, "--data", data, "--engine", "local",
                                "--markdown", str(job / "report.md"), "--json", "--allow-failures"])]
    with pytest.raises(Refused, match=r"^data folder: give a path under the root folder, or upload a file$"):
        _plan("submission", {"task": "narrative", "pred": "pred.jsonl"}, folders)  # narrative needs its data


def test_sextuple_with_a_built_in_predictor_and_its_subset(folders):
    job, title, steps = _plan("submission", {"task": "sextuple", "pred": "oracle", "subset": "paper-100"}, folders)
    assert title == "sextuple: oracle on paper-100"
    assert steps == [("score", ["score", "sextuple", "--pred", "oracle", "--subset", "paper-100", "--engine",
                                "local", "--out", str(job / "report"), "--json", "--allow-failures"])]
    job, title, steps = _plan("submission", {"task": "emotion", "pred": "pred.jsonl"}, folders)
    assert title == "emotion: pred.jsonl"
    assert steps[0][1] == ["score", "emotion", "--pred", str(folders.root / "pred.jsonl"), "--engine", "local",
                           "--out", str(job / "report"), "--json", "--allow-failures"]
    with pytest.raises(UsageError, match=r"^subset 'x': one of sample, paper-100, long-20, all$"):
        _plan("submission", {"task": "sextuple", "pred": "oracle", "subset": "x"}, folders)
    with pytest.raises(Refused, match="no such file"):  # a predictor's name only for sextuple and emotion
        _plan("submission", {"task": "aer", "pred": "oracle"}, folders)


def test_unknown_kinds_and_tasks_are_named(folders):
    with pytest.raises(UsageError, match=r"^unknown job kind 'x'$"):
        _plan("x", {}, folders)
    with pytest.raises(UsageError, match=r"^task 'x': one of aer, ecpe, narrative, sextuple, emotion$"):
        _plan("submission", {"task": "x"}, folders)
    with pytest.raises(Refused, match=r"^submission: give a path"):
        _plan("submission", {"task": "ecpe", "pred": "  "}, folders)


def test_each_refusal_says_where(folders, tmp_path):
    root = folders.root
    with pytest.raises(Refused) as got:
        folders.resolve("  ", "the file")
    assert str(got.value) == f"the file: empty; give a path relative to the folder the workbench was started with ({root})"
    with pytest.raises(Refused) as got:
        folders.resolve("out:/x", "upload")
    assert str(got.value) == (f"upload '/x': an absolute path; paths are refused outside it: give one relative to the "
                              f"output folder ({folders.out})")
    with pytest.raises(Refused, match=r"^path 'a.*b': '\.\.' leaves the folder"):  # a Windows separator is one too
        folders.resolve("a\\..\\b")
    with pytest.raises(Refused, match=r"an absolute path"):
        folders.resolve("c:x")
    with pytest.raises(Refused) as got:
        folders.resolve("none", "run")
    assert str(got.value) == f"run 'none': no such file or folder in the folder the workbench was started with ({root})"
    assert folders.resolve(" data ") == root / "data" and folders.resolve("data/.") == root / "data"


def test_a_link_inside_a_folder_that_leads_out_is_named(folders, tmp_path):
    (tmp_path / "elsewhere").mkdir()
    (folders.root / "data" / "deep").mkdir()
    (folders.root / "data" / "deep" / "away").symlink_to(tmp_path / "elsewhere")
    (folders.root / "data" / "back").symlink_to(folders.root / "data")  # a loop inside: walked once
    with pytest.raises(Refused) as got:
        folders.resolve("data", "data folder")
    assert str(got.value).startswith(f"data folder 'data': data/deep/away is a symbolic link to {tmp_path / 'elsewhere'}, "
                                     "outside the folder")
    os.unlink(folders.root / "data" / "deep" / "away")
    assert folders.resolve("data") == folders.root / "data"


def test_numbered_folders_and_upload_names(folders):
    first = folders.next_folder("uploads")
    (folders.out / "uploads" / "0002").mkdir()  # taken already: skipped
    assert first == folders.out / "uploads" / "0001" and folders.next_folder("uploads").name == "0003"
    assert folders.next_folder("jobs") == folders.out / "jobs" / "0004"
    assert folders.ref(first / "a b.json") == "out:uploads/0001/a b.json"
    assert folders.save_upload(first, "." * 3, b"1").read_bytes() == b"1"  # '...' is a plain name
    for name in (".", "a\\b", "a\x00b"):
        with pytest.raises(Refused, match="not a plain file name"):
            folders.save_upload(first, name, b"")
    assert folders.save_upload(first, "é" * 127, b"").name == "é" * 127  # 254 bytes: taken
    with pytest.raises(Refused) as got:
        folders.save_upload(first, "é" * 128, b"")
    assert str(got.value) == f"upload name {'é' * 40!r}...: too long (128 characters); rename the file"


def test_run_folders_are_found_to_their_depth_skipping_hidden_folders_and_links(tmp_path):
    root = tmp_path / "r"
    for rel in ("a/evallog", "a/inner/evallog", "b/c/d/evallog", "b/c/d/e/evallog", ".hidden/evallog", "z/evallog",
                "evallog-not/x"):
        (root / rel).mkdir(parents=True)
    (root / "link").symlink_to(root / "a")
    assert run_folders(root) == ["a", "b/c/d", "z"]
    assert run_folders(root / "a") == ["."]


class StubJobs:
    """Records the jobs the server starts, and answers as a job that has ended."""

    def __init__(self) -> None:
        self.jobs: dict[str, Job] = {}
        self.cancelled: list[str] = []

    def start(self, kind, title, folder, steps):
        job = Job(id=folder.name, kind=kind, title=title, folder=folder, steps=steps, state="done", ended=1.0,
                  started=0.0)
        (folder / "score.out").write_text('{"ok": true}', encoding="utf-8")
        self.jobs[job.id] = job
        return job

    def cancel(self, job):
        self.cancelled.append(job.id)

    def stop_all(self):
        pass


@pytest.fixture
def bench(folders):
    bench = Workbench(folders.root, folders.out, lambda argv: 0)
    bench.jobs = StubJobs()
    server = make_server(bench, 0)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    bench.port = server.server_address[1]
    try:
        yield bench
    finally:
        server.shutdown()
        server.server_close()


def _ask(bench, method: str, path: str, body: bytes | None = None, headers: dict | None = None):
    conn = http.client.HTTPConnection("127.0.0.1", bench.port, timeout=10)
    conn.request(method, path, body=body, headers=headers or {})
    r = conn.getresponse()
    try:
        got = r.read()
        return r.status, r.getheader("Content-Type"), got
    finally:
        conn.close()


def test_state_names_the_folders_and_the_forms_choices(bench):
    code, kind, body = _ask(bench, "GET", "/api/state")
    assert (code, kind) == (200, "application/json; charset=utf-8")
    assert json.loads(body) == {"root": str(bench.folders.root), "out": str(bench.folders.out), "runs": [],
                                "tasks": ["aer", "ecpe", "narrative", "sextuple", "emotion"],
                                "splits": ["sample", "dev", "test", "train"],
                                "subsets": ["sample", "paper-100", "long-20", "all"], "predictors": ["oracle", "baseline"],
                                "rounds": ["FreeTopicRound1", "FreeTopicRound2"]}


def test_a_job_is_started_read_and_cancelled(bench):
    form = {"kind": "submission", "task": "ecpe", "pred": "pred.jsonl"}
    code, _, body = _ask(bench, "POST", "/api/jobs", json.dumps(form).encode())
    doc = json.loads(body)
    assert code == 200 and (doc["id"], doc["title"], doc["state"]) == ("0001", "ecpe: pred.jsonl", "done")
    assert [s["command"] for s in doc["steps"]][1] == f"emocaustics score ecpe --pred {bench.folders.root}/pred.jsonl " \
                                                     "--json --allow-failures"
    code, _, body = _ask(bench, "GET", "/api/jobs/0001")
    assert code == 200 and json.loads(body)["title"] == "ecpe: pred.jsonl"
    code, _, body = _ask(bench, "POST", "/api/jobs/0001/cancel", b"")
    assert code == 200 and json.loads(body)["id"] == "0001" and bench.jobs.cancelled == ["0001"]
    for method, path in (("GET", "/api/jobs/0009"), ("POST", "/api/jobs/0009/cancel")):
        code, _, body = _ask(bench, method, path, b"" if method == "POST" else None)
        assert code == 404 and json.loads(body) == {"error": "0009"}


def test_a_refused_form_is_a_400_and_leaves_no_job_folder(bench):
    code, _, body = _ask(bench, "POST", "/api/jobs", json.dumps({"kind": "nope"}).encode())
    assert code == 400 and json.loads(body)["error"] == "unknown job kind 'nope'"  # its own quotes kept
    code, _, body = _ask(bench, "POST", "/api/jobs", b"")  # no body: no kind
    assert code == 400 and json.loads(body)["error"] == "unknown job kind ''"
    assert not any((bench.folders.out / "jobs").iterdir())
    assert bench.jobs.jobs == {}


def test_an_upload_goes_to_a_new_folder_or_to_one_of_the_uploads(bench):
    code, _, body = _ask(bench, "POST", "/api/upload?name=a.json", b"1")
    assert (code, json.loads(body)) == (200, {"ref": "out:uploads/0001/a.json", "folder": "out:uploads/0001"})
    code, _, body = _ask(bench, "POST", "/api/upload?name=b.json&folder=out:uploads/0001", b"2")
    assert (code, json.loads(body)) == (200, {"ref": "out:uploads/0001/b.json", "folder": "out:uploads/0001"})
    job = bench.folders.next_folder("jobs")
    code, _, body = _ask(bench, "POST", f"/api/upload?name=c.json&folder={bench.folders.ref(job)}", b"3")
    assert code == 400 and json.loads(body) == {"error": "upload folder 'out:jobs/0002': not one of the workbench's uploads"}
    code, _, body = _ask(bench, "POST", "/api/upload?name=c.json&folder=out:uploads", b"3")
    assert code == 400 and "not one of the workbench's uploads" in json.loads(body)["error"]


def test_a_file_the_workbench_wrote_is_served_with_its_type(bench):
    folder = bench.folders.next_folder("uploads")
    (folder / "t.json").write_text('{"a": 1}', encoding="utf-8")
    (folder / "t.bin").write_bytes(b"\x00")
    (folder / "noext").write_text("plain", encoding="utf-8")
    assert _ask(bench, "GET", "/out/uploads/0001/t.json") == (200, "application/json", b'{"a": 1}')
    assert _ask(bench, "GET", "/out/uploads/0001/noext") == (200, "text/plain; charset=utf-8", b"plain")
    assert _ask(bench, "GET", "/out/uploads/0001/t%2Ejson")[2] == b'{"a": 1}'  # the path is unquoted
    assert _ask(bench, "GET", "/out/uploads/0001") == (404, "text/plain; charset=utf-8", b"not a file")
    code, kind, body = _ask(bench, "GET", "/out/none")
    assert (code, kind) == (404, "text/plain; charset=utf-8") and body.startswith(b"file 'none': no such file")
    assert _ask(bench, "GET", "/nothing") == (404, "text/plain; charset=utf-8", b"not found")
    code, _, body = _ask(bench, "POST", "/api/nothing", b"")
    assert (code, json.loads(body)) == (404, {"error": "not found"})


def test_an_upload_over_the_cap_is_refused_unread(bench, monkeypatch):
    monkeypatch.setattr(server_module, "MAX_UPLOAD", 4 << 20)
    code, _, body = _ask(bench, "POST", "/api/upload?name=a", b"", {"Content-Length": str((4 << 20) + 1)})
    assert (code, json.loads(body)) == (413, {"error": "over 4 MiB: give a path under the root instead"})
    code, _, body = _ask(bench, "POST", "/api/upload?name=a", b"x" * 8)
    assert code == 200


def test_a_post_from_the_pages_own_origin_is_answered(bench):
    own = {"Origin": f"http://127.0.0.1:{bench.port}"}
    assert _ask(bench, "POST", "/api/upload?name=a", b"1", own)[0] == 200
    code, _, body = _ask(bench, "POST", "/api/upload?name=a", b"1", {"Origin": "http://127.0.0.1:1"})
    assert (code, json.loads(body)) == (403, {"error": "a request from http://127.0.0.1:1 is refused"})
    assert _ask(bench, "GET", "/api/state", None, {"Origin": "http://elsewhere"})[0] == 200  # a GET changes nothing


def test_a_viewer_is_opened_once_per_run_folder(bench):
    run = bench.folders.root / "run"
    (run / "evallog").mkdir(parents=True)
    code, _, body = _ask(bench, "POST", "/api/view", json.dumps({"run": "data"}).encode())
    assert (code, json.loads(body)) == (400, {"error": "run folder 'data': no evallog/ in it (not a run folder of "
                                                       "`emocaustics run`)"})
    try:
        first = json.loads(_ask(bench, "POST", "/api/view", json.dumps({"run": "run"}).encode())[2])
        again = json.loads(_ask(bench, "POST", "/api/view", json.dumps({"run": "run/"}).encode())[2])
        assert first == again and first["url"].startswith("http://127.0.0.1:") and list(bench.viewers) == [run]
        assert first["url"] == f"http://127.0.0.1:{bench.viewers[run].server_address[1]}/"
    finally:
        bench.close()
    code, _, body = _ask(bench, "POST", "/api/view", b"")
    assert code == 400 and json.loads(body)["error"].startswith("run folder: empty")


def test_a_judge_is_run_on_a_round_as_eval_does(folders):
    job, title, steps = _plan("dialogue-judge", {"model": " openai:gpt-4o-mini ", "round": "FreeTopicRound2",
                                                 "data": "data", "limit": "40"}, folders)
    assert title == "judge openai:gpt-4o-mini on FreeTopicRound2"
    assert steps == [("eval", ["eval", "dialogue-judge", "--model", "openai:gpt-4o-mini", "--split", "FreeTopicRound2",
                               "-D", f"data={folders.root / 'data'}", "--limit", "40", "--out", str(job / "run"),
                               "--allow-failures"])]
    _, _, steps = _plan("dialogue-judge", {"model": "anthropic:claude-sonnet-4-5", "round": "FreeTopicRound1"},
                        folders)
    assert steps[0][1][:6] == ["eval", "dialogue-judge", "--model", "anthropic:claude-sonnet-4-5", "--split",
                               "FreeTopicRound1"] and "-D" not in steps[0][1] and "--limit" not in steps[0][1]


@pytest.mark.parametrize("form, says", [
    ({"model": "vllm:/weights/elsewhere", "round": "FreeTopicRound1"}, r"^model 'vllm:/weights/elsewhere': a model "
                                                                       r"behind an endpoint \(e\.g\. openai:"),
    ({"model": "", "round": "FreeTopicRound1"}, r"^model '': a model behind an endpoint"),
    ({"model": "openai:m", "round": "Round3"}, r"^round 'Round3': one of FreeTopicRound1, FreeTopicRound2$"),
    ({"model": "openai:m", "round": "FreeTopicRound1", "limit": "ten"}, r"^limit 'ten': a number of conversations"),
])
def test_a_judge_form_is_refused_with_what_it_needs(folders, form, says):
    with pytest.raises(UsageError, match=says):
        _plan("dialogue-judge", form, folders)


def test_a_judge_s_conversations_folder_stays_under_the_root(folders):
    with pytest.raises(Refused, match=r"conversations folder"):
        _plan("dialogue-judge", {"model": "openai:m", "round": "FreeTopicRound1", "data": "../outside"}, folders)


def test_a_job_started_in_process_runs_in_its_own_folder(bench):
    with pytest.raises(UsageError, match=r"^unknown job kind ''$"):
        bench.start({})
    doc = bench.start({"kind": "submission", "task": "sextuple", "pred": "oracle"})
    job = bench.folders.out / "jobs" / "0002"  # 0001 was made for the refused form, and taken back
    assert doc["steps"][0]["command"] == (f"emocaustics score sextuple --pred oracle --engine local --out {job}/report "
                                          "--json --allow-failures")
    assert doc["files"] == ["out:jobs/0002/score.out"] and doc["steps"][0]["json"] == {"ok": True}


def test_missing_fields_of_a_submission(folders):
    with pytest.raises(UsageError, match=r"^task '': one of aer, ecpe, narrative, sextuple, emotion$"):
        _plan("submission", {}, folders)
    _, title, steps = _plan("submission", {"task": "emotion", "pred": "baseline"}, folders)
    assert title == "emotion: baseline" and steps[0][1][:4] == ["score", "emotion", "--pred", "baseline"]


def test_a_refused_field_is_named_by_what_it_is(folders):
    cases = [("human-process", {"hits": "none"}, "ratings file 'none': no such file"),
             ("human-process", {}, "ratings file: give a path"),
             ("human-process", {"hits": "hits.json", "metadata": "none"}, "metadata file 'none': no such file"),
             ("human-replicate", {"run1": "r1", "run2": "none"}, "run 2 'none': no such file"),
             ("human-replicate", {"run1": "none", "run2": "r2"}, "run 1 'none': no such file"),
             ("submission", {"task": "ecpe", "pred": "none"}, "submission 'none': no such file"),
             ("submission", {"task": "ecpe", "pred": "pred.jsonl", "data": "none"}, "data folder 'none': no such file")]
    for kind, form, says in cases:
        with pytest.raises(Refused) as got:
            _plan(kind, form, folders)
        assert str(got.value).startswith(says), (form, str(got.value))


def test_upload_edges(bench, tmp_path):
    code, _, body = _ask(bench, "POST", "/api/upload", b"1")  # no name
    assert code == 400 and json.loads(body)["error"] == "upload name '': not a plain file name"
    code, _, body = _ask(bench, "POST", "/api/upload?name=a&folder=out:uploads/9999", b"1")
    assert code == 400 and json.loads(body)["error"].startswith("upload folder 'uploads/9999': no such file")
    folder = bench.folders.next_folder("uploads")
    name = "é" * 127 + "a"  # 255 bytes: the longest a file system takes
    assert bench.folders.save_upload(folder, name, b"").name == name


def test_run_folders_at_the_depth_limit_and_a_linked_evallog(tmp_path):
    root = tmp_path / "r"
    for rel in ("p/q/r/s/evallog", "v/w/x/y/z/evallog", "elsewhere/evallog"):
        (root / rel).mkdir(parents=True)
    (root / "m").mkdir()
    (root / "m" / "evallog").symlink_to(root / "elsewhere" / "evallog")
    assert run_folders(root) == ["elsewhere", "p/q/r/s"]
