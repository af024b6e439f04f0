"""`dialogue-judge` from the upstream HIT_detail files (issue 56, "What to build" 1): the round's txt files read into
the very records of the shared `dialogues_<round>.jsonl`, the round's metadata read off them, a malformed file named
by file and line, and `data fetch dialogue-judge` from a loopback HTTP server serving a tarball built here.

The txt files are rendered here from the shared jsonl's records in the upstream's layout (one file per assignment,
`(flag)ASSIGNMENT_HIT_WORKER.txt`, a block per system between lines of 20 `#`), so the round trip jsonl -> txt ->
records checks every field of every line of both rounds."""

from __future__ import annotations

import http.server
import io
import json
import tarfile
import threading
from pathlib import Path

import pytest

from emocaustics.cli import main
from emocaustics.core.errors import DataError, UsageError
from emocaustics.core.task import get_task
from emocaustics.tasks.dialoguejudge.data import FOLDERS, SOURCE, hit_detail, metadata_of
from emocaustics.tasks.human.data import COMMIT

TASK = get_task("dialogue-judge")
SEP = "#" * 20
SHARED = Path(__file__).resolve().parents[3] / ".." / "shared" / "datasets" / "humaneval"
NEGATIVE = {"robotic", "repetitive"}  # marked (↓) in the upstream files, as in the normative metadata


def shared(split: str) -> tuple[list[dict], dict]:
    """The shared jsonl's records and the normative metadata of round `split` (skipped where the copy is absent)."""
    convs, hits = SHARED / f"dialogues_{split}.jsonl", SHARED / f"hits_data_{split}.json"
    if not convs.is_file() or not hits.is_file():
        pytest.skip(f"no shared copy of {split} at {SHARED}")
    return ([json.loads(line) for line in convs.read_text().splitlines()],
            json.loads(hits.read_text())["metadata"])


def render(records: list[dict], feedback: str = "None") -> str:
    """One assignment's HIT_detail file, as the upstream writes it."""
    out = [f"Feedback: {feedback}", SEP, ""]
    for r in records:
        shown = {k: 100 - v if k in NEGATIVE else v for k, v in r["scores"].items()}
        out += [f"Model: {r['model'].removesuffix('_p')}", "", "Conversation:",
                *[f"{who}({t['round']}): {t[who.lower()]}" for t in r["turns"] for who in ("User", "Bot")],
                "", "Persona:", *(r["persona"] or ["None"]), "", "Topic and Human Opinion:", r["topic"], "",
                "Topic Change and Chatbot Opinion:", r["topic_change"] or "None", "",
                f"Revised avg score: {sum(shown.values()) / len(shown):.2f}",
                *[f"{k.capitalize()}{'(↓)' if k in NEGATIVE else ''}: {v}" for k, v in r["scores"].items()],
                "", SEP, ""]
    return "\n".join(out)


def write_round(folder: Path, records: list[dict]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    by: dict[str, list[dict]] = {}
    for r in records:
        by.setdefault(r["assignment"], []).append(r)
    for aid, rs in by.items():
        (folder / f"({rs[0]['file_flag']}){aid}_{rs[0]['hit']}_{rs[0]['worker']}.txt").write_text(
            render(rs), encoding="utf-8")
    return folder


@pytest.mark.parametrize("split, lines", [("FreeTopicRound1", 1824), ("FreeTopicRound2", 1764)])
def test_every_line_of_both_rounds_comes_back_from_its_txt_files(tmp_path, split, lines):
    records, normative = shared(split)
    assert len(records) == lines
    positive: dict[str, bool] = {}
    got = hit_detail(write_round(tmp_path / split, records), split, positive)
    assert [r for _, _, r in got] == records  # every field, in the jsonl's order (the files' names sorted)
    meta = metadata_of(got, positive, tmp_path).to_json()
    # the metadata read off the files is the normative file's, but for round 2's fixed ranking (round 1's order)
    assert meta == {**normative, "ranking": None}


def test_a_round_loads_from_its_txt_files_as_from_the_jsonl(small_round, tmp_path):
    split = "FreeTopicRound1"
    records = [json.loads(line) for line in (small_round / f"dialogues_{split}.jsonl").read_text().splitlines()]
    write_round(tmp_path / FOLDERS[split], records)  # the upstream's own folder name is found too
    from_jsonl = TASK.load(TASK.Dataset(data=str(small_round), split=split), TASK.Options(method="oracle"))
    from_txt = TASK.load(TASK.Dataset(data=str(tmp_path), split=split), TASK.Options(method="oracle"))
    assert len(from_txt.samples) == len(records)
    assert [(s.id, s.input, s.target, s.meta) for s in from_txt.samples] == \
        [(s.id, s.input, s.target, s.meta) for s in from_jsonl.samples]
    assert from_txt.info["file"] == str(tmp_path / FOLDERS[split])


EXCERPT = """Feedback: fine
####################

Model: kvmemnn

Conversation:
User(1): Hi
Bot(1): hello , how are you ?
User(2): Do you fish?
Bot(2): i like to ride horses .

Persona:
i like to ride horses.
i am a plumber.

Topic and Human Opinion:
Beginning: Fishing(like)
Round 2: horses(ambivalent)

Topic Change and Chatbot Opinion:
Round 2: The chatbot changed the topic.(like)

Revised avg score: 50.00
Robotic(↓): 80
Interesting: 60
Fun: 55.5

####################

Model: qc

Conversation:
User(1): Hi
Bot(1): I you want garden

Persona:
None

Topic and Human Opinion:
Beginning: Cars(like)

Topic Change and Chatbot Opinion:
None

Revised avg score: 10.00
Robotic(↓): 100
Interesting: 5
Fun: 0

####################
"""
NAME = "(Maybe)3AAA_3HHH_AWWW.txt"


def test_a_hand_made_file_reads_into_records(tmp_path):
    (tmp_path / NAME).write_text(EXCERPT)
    positive: dict[str, bool] = {}
    (file, at, first), (_, _, qc) = hit_detail(tmp_path, "Mine", positive)
    assert (file, at) == (str(tmp_path / NAME), "line 4")
    assert first == {"round": "Mine", "hit": "3HHH", "assignment": "3AAA", "worker": "AWWW", "file_flag": "Maybe",
                     "model": "kvmemnn_p", "turns": [{"round": 1, "user": "Hi", "bot": "hello , how are you ?"},
                                                     {"round": 2, "user": "Do you fish?",
                                                      "bot": "i like to ride horses ."}],
                     "persona": ["i like to ride horses.", "i am a plumber."],
                     "topic": "Beginning: Fishing(like)\nRound 2: horses(ambivalent)",
                     "topic_change": "Round 2: The chatbot changed the topic.(like)",
                     "scores": {"robotic": 80, "interesting": 60, "fun": 55.5}}
    assert (qc["model"], qc["persona"], qc["topic_change"]) == ("qc", [], "")
    assert positive == {"robotic": False, "interesting": True, "fun": True}
    meta = metadata_of([(file, at, first), (file, at, qc)], positive, tmp_path)
    assert (meta.models, meta.qc_model, meta.qc_scores, meta.sorted_scores) == \
        (("kvmemnn_p",), "qc", ("interesting", "fun"), ("interesting", "fun", "robotic"))


@pytest.mark.parametrize("old, new, line", [
    ("Bot(2): i like", "Bot(3): i like", 9),  # a turn out of order: named at its round's User line
    ("User(2): Do you fish?\n", "", 9),  # a user turn missing: Bot(1) is followed by Bot(2)
    ("Bot(1): I you want garden\n", "", 33),  # the last user turn has no answer
    ("Fun: 55.5", "Fun: lots", 26),  # a rating that is no number
    ("Interesting: 60", "Interesting 60", 25),
    ("Conversation:\nUser(1): Hi\nBot(1): hello", "Chat:\nUser(1): Hi\nBot(1): hello", 6),  # no Conversation header
    ("Revised avg score: 10.00", "Revised: 10", 30),  # the qc block has no ratings section: named at its Model line
    ("Model: qc", "Modell: qc", 30),
])
def test_a_malformed_file_is_named_by_file_and_line(tmp_path, old, new, line):
    assert old in EXCERPT
    (tmp_path / NAME).write_text(EXCERPT.replace(old, new, 1))
    with pytest.raises(DataError) as err:
        hit_detail(tmp_path, "Mine", {})
    assert err.value.file == str(tmp_path / NAME) and err.value.record == f"line {line}", str(err.value)


def test_a_file_not_named_flag_assignment_hit_worker_is_named(tmp_path):
    (tmp_path / "notes.txt").write_text(EXCERPT)
    with pytest.raises(DataError, match="notes.txt.*not a HIT_detail file name"):
        hit_detail(tmp_path, "Mine", {})


def tarball(files: dict[str, str]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


@pytest.fixture
def served():
    """A loopback HTTP server answering every GET with the bytes put in `served.body` (GitHub's codeload's part)."""
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            self.send_response(200)
            self.send_header("Content-Length", str(len(server.body)))
            self.end_headers()
            self.wfile.write(server.body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.body = b""
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


def test_data_fetch_dialogue_judge_keeps_both_rounds_and_the_task_loads_them(served, tmp_path, monkeypatch, capsys):
    top = f"Dialogue-Eval-{COMMIT}"
    excerpt2 = EXCERPT.replace("Model: kvmemnn", "Model: seq2seq")
    served.body = tarball({
        f"{top}/LICENSE": "MIT",
        f"{top}/dialogue_data/HIT_detail/free(run1)/{NAME}": EXCERPT,
        f"{top}/dialogue_data/HIT_detail/free(run2)/(True)3BBB_3III_AVVV.txt": excerpt2,
        f"{top}/dialogue_data/HIT_detail/icebreaker/(True)3CCC_3JJJ_AUUU.txt": EXCERPT,  # another experiment
        f"{top}/dialogue_data/HIT_detail/readme.md": "# Description",
        f"{top}/data/raw_mturk_csv/FreeTopicRound1/Combined_Batches_305hits.csv": "HITId,...",
    })
    url = f"http://127.0.0.1:{served.server_address[1]}/TianboJi/Dialogue-Eval/tar.gz/{COMMIT}"
    monkeypatch.setenv("EMOCAUSTICS_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("EMOCAUSTICS_HUMANEVAL_DATA", raising=False)
    assert main(["data", "fetch", "dialogue-judge", "--url", url]) == 0
    dest = SOURCE.cache_dir()
    assert dest == tmp_path / "cache" / "datasets" / "humaneval-dialogues" and "fetch cache" in capsys.readouterr().out
    assert sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file()) == [
        f"FreeTopicRound1/{NAME}", "FreeTopicRound2/(True)3BBB_3III_AVVV.txt", "LICENSE", "SOURCE.md"]
    assert COMMIT in (dest / "SOURCE.md").read_text()
    for split, system in (("FreeTopicRound1", "kvmemnn_p"), ("FreeTopicRound2", "seq2seq_p")):  # found without data
        loaded = TASK.load(TASK.Dataset(split=split), TASK.Options(method="oracle"))
        assert [s.meta["model"] for s in loaded.samples] == [system, "qc"]
        assert loaded.samples[0].target == {"robotic": 80.0, "interesting": 60.0, "fun": 55.5}


def test_a_tarball_without_the_rounds_writes_nothing(served, tmp_path):
    served.body = tarball({"Dialogue-Eval-x/LICENSE": "MIT",
                           "Dialogue-Eval-x/dialogue_data/HIT_detail/free(run1)/" + NAME: EXCERPT})
    url = f"http://127.0.0.1:{served.server_address[1]}/archive.tar.gz"
    with pytest.raises(UsageError, match=r"has no dialogue_data/HIT_detail/free\(run2\)/\*\.txt"):
        SOURCE.fetch(tmp_path / "d", urls=(url,))
    assert not (tmp_path / "d").exists()
