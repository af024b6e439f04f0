"""The peer race (issue 55 item 5): the same 4-option questions through emocaustics, inspect_ai and
lm-evaluation-harness, each as a whole process against ONE OpenAI-compatible stand-in, each held to the same number
of connections.

- emocaustics: `python -m emocaustics eval peer-mc.yaml --model openai:standin@URL?concurrency=64` (a YAML task:
  `multiple_choice` solver, `exact_match` scorer), a fresh response cache per run;
- inspect_ai: `inspect eval peer_mc.py` with `multiple_choice()` + `choice()`, `--max-connections 64`, and
  `-M responses_api=false` (its `openai` provider would otherwise use the Responses API, which an OpenAI-compatible
  server such as `vllm serve` or the stand-in may not have);
- lm-eval: `lm_eval --model local-chat-completions --model_args ...num_concurrent=64` on a `generate_until` task
  whose regex filter takes the letter after `ANSWER:`.

inspect_ai and lm-eval are installed by this benchmark into venvs of their own (`PEERS`, default
`~/.cache/emocaustics/peers/<tool>`, made on first use, pinned in `PINS`), never into the project's: lm-eval's venv
gets the CPU wheel of torch first and keeps it pinned, so pip pulls no CUDA.

The stand-in is `standin_server.Standin` (fixed latency per call, limited slots, a queue beyond them) answering
multiple choice: it reads `Question N:` in the prompt and answers `standin_letter(N)`, the right letter except for
every fifth question (N % 5 == 4), so the accuracy every tool must report is `designed_accuracy(n)` (0.8 at 400).
It answers `{"answer": L}` to a request with a JSON schema (emocaustics) and `ANSWER: L` otherwise (the format both
peers' templates ask for). It counts the calls and the asks per question: one call per question is checked.

Timing as race_bench's: each run a new process started from this one, timed from start to exit (`time.time()` around
`subprocess.run`), its CPU from `RUSAGE_CHILDREN`. Per size: WARMUPS runs of each tool, discarded, then REPEATS rounds,
the tools in turn (the first tool rotating per round); medians. Floor: max(latency, calls x latency / connections).

    python -m benchmarks.peer_race [--sizes 1,400,2000] [--repeats 3] [--warmups 1]
        [--tools emocaustics,inspect_ai,lm_eval] [--tag NAME] [--install-only]

Results: `benchmarks/results/peer_race[_TAG].json` and `.md` (the table, printed too).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks.standin_server import Standin, serve
from benchmarks.startup_bench import Standin as StandinProcess
from benchmarks.startup_bench import breakdown, run_record

REPO = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).resolve().parent / "results"
PEERS = Path(os.environ.get("EMOCAUSTICS_PEERS", Path.home() / ".cache" / "emocaustics" / "peers"))
LETTERS = "ABCD"
TOOLS = ("emocaustics", "inspect_ai", "lm_eval")
# pip steps per peer venv, in order. lm-eval depends on torch: the CPU wheel first, then lm-eval with torch pinned so
# pip keeps it (a bare or newer torch pulls GBs of CUDA). Versions: the ones issue 55 measured.
PINS = {"inspect_ai": [["inspect_ai==0.3.285", "openai==3.63.0"]],
        "lm_eval": [["torch==2.13.0"], ["lm-eval[api]==0.4.13", "torch==2.13.0"]]}
DIST = {"inspect_ai": "inspect_ai", "lm_eval": "lm_eval"}
QUESTION = re.compile(r"Question (\d+):")
INSTRUCTION = "Answer with the letter of the right choice."


def correct_letter(i: int) -> str:
    return LETTERS[(3 * i + 1) % 4]


def standin_letter(i: int) -> str:
    """What the stand-in answers to question i: right, but wrong (the next letter) for every fifth question."""
    right = correct_letter(i)
    return right if i % 5 != 4 else LETTERS[(LETTERS.index(right) + 1) % 4]


def designed_accuracy(n: int) -> float:
    return sum(standin_letter(i) == correct_letter(i) for i in range(n)) / n


def floor_s(calls: int, latency: float, connections: int) -> float:
    """One call's latency at least; else the calls through `connections` at once."""
    return round(max(latency, calls * latency / connections), 3) if calls else 0.0


def questions(n: int) -> list[dict[str, Any]]:
    rows = []
    for i in range(n):
        choices = [f"choice {L.lower()} of question {i}" for L in LETTERS]
        question = f"Question {i}: which of these four is the right one?"
        shown = "\n".join(f"{L}) {c}" for L, c in zip(LETTERS, choices))
        rows.append({"qid": i, "question": question, "choices": choices, "target": correct_letter(i),
                     "prompt": f"{question}\n\n{shown}\n\n{INSTRUCTION} Reply as 'ANSWER: $LETTER'."})
    return rows


class MCStandin(Standin):
    """The stand-in's timing and counts, answering the race's questions (see the module docstring)."""

    def reset(self) -> None:
        super().reset()
        self.asked: Counter[int] = Counter()
        self.unrecognised = 0

    def stats(self) -> dict[str, Any]:
        return {**super().stats(), "questions_asked": len(self.asked), "unrecognised": self.unrecognised,
                "max_asks_per_question": max(self.asked.values(), default=0)}

    async def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        out = await super().answer(body)
        text = "\n".join(part if isinstance(part, str) else str(part.get("text", ""))
                         for m in body.get("messages", []) if m.get("role") == "user"
                         for part in (m["content"] if isinstance(m.get("content"), list) else [m.get("content")])
                         if part)
        found = QUESTION.search(text)
        if found is None:
            self.unrecognised += 1
        else:
            self.asked[int(found.group(1))] += 1
        letter = standin_letter(int(found.group(1))) if found else "A"
        schema = (body.get("response_format") or {}).get("type") == "json_schema"
        out["choices"][0]["message"]["content"] = json.dumps({"answer": letter}) if schema else f"ANSWER: {letter}"
        return out


class Server(StandinProcess):
    """The MC stand-in in its own process (its loop must not share a GIL with a client it measures)."""

    def __init__(self, latency: float, slots: int) -> None:  # not super().__init__: that starts the plain stand-in
        self.proc = subprocess.Popen([sys.executable, "-m", "benchmarks.peer_race", "--serve", "--latency",
                                      str(latency), "--slots", str(slots)], cwd=REPO, stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline() if self.proc.stdout else ""
        if not line.startswith("URL "):
            self.proc.kill()
            raise RuntimeError(f"peer_race stand-in did not start: {line!r}")
        self.url = line.split()[1]
        self.root = self.url.rsplit("/v1", 1)[0]


def peer_python(tool: str) -> Path:
    return PEERS / tool / "bin" / "python"


def ensure_peer(tool: str) -> str:
    """The peer's venv, made and pip-installed (PINS) on first use; its version."""
    py = peer_python(tool)
    probe = [str(py), "-c", f"import importlib.metadata as m; print(m.version({DIST[tool]!r}))"]
    if py.exists() and subprocess.run(probe, capture_output=True).returncode == 0:
        return subprocess.run(probe, capture_output=True, text=True).stdout.strip()
    PEERS.mkdir(parents=True, exist_ok=True)
    print(f"peer_race: installing {tool} into {PEERS / tool} (first use)", file=sys.stderr, flush=True)
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(PEERS / tool)], check=True)
    for step in PINS[tool]:
        done = subprocess.run([str(py), "-m", "pip", "install", "-q", *step], capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError(f"peer_race: pip install {' '.join(step)} into {PEERS / tool} failed:\n"
                               f"{done.stderr[-2000:]}")
    return subprocess.run(probe, capture_output=True, text=True, check=True).stdout.strip()


def prepare(work: Path, n: int) -> dict[str, Path]:
    """The questions and each tool's task file for n questions, under work."""
    work.mkdir(parents=True, exist_ok=True)
    data = work / "questions.jsonl"
    data.write_text("".join(json.dumps(q) + "\n" for q in questions(n)), encoding="utf-8")
    ours = work / "peer-mc.yaml"
    ours.write_text("name: peer-mc\ndescription: the peer race's 4-option questions\ndataset: {path: questions.jsonl}\n"
                    "fields: {id: qid, target: target, input: [question, choices]}\nsolver:\n  name: multiple_choice\n"
                    f"  prompt: \"{{question}}\\n\\n{{choices}}\\n\\n{INSTRUCTION} Answer as JSON.\"\n"
                    "scorer: {name: exact_match, field: answer}\n", encoding="utf-8")
    inspect = work / "peer_mc_inspect.py"
    inspect.write_text("from inspect_ai import Task, task\nfrom inspect_ai.dataset import FieldSpec, json_dataset\n"
                       "from inspect_ai.scorer import choice\nfrom inspect_ai.solver import multiple_choice\n\n\n"
                       "@task\ndef peer_mc(data: str) -> Task:\n    return Task(dataset=json_dataset(data, FieldSpec("
                       "input='question', choices='choices', target='target', id='qid')),\n"
                       "                solver=multiple_choice(), scorer=choice())\n", encoding="utf-8")
    harness = work / "lm_eval_tasks"
    harness.mkdir(exist_ok=True)
    (harness / "peer_mc.yaml").write_text(
        f"task: peer_mc\ndataset_path: json\ndataset_kwargs:\n  data_files: {{test: {data}}}\ntest_split: test\n"
        "output_type: generate_until\ndoc_to_text: '{{prompt}}'\ndoc_to_target: '{{target}}'\n"
        "generation_kwargs: {until: [\"\\n\\n\"], max_gen_toks: 16, do_sample: false}\n"
        "filter_list:\n  - name: get-answer\n    filter:\n      - {function: regex, regex_pattern: 'ANSWER: ([A-D])'}\n"
        "      - {function: take_first}\n"
        "metric_list:\n  - {metric: exact_match, aggregation: mean, higher_is_better: true}\n", encoding="utf-8")
    return {"data": data, "emocaustics": ours, "inspect_ai": inspect, "lm_eval": harness}


def command(tool: str, files: dict[str, Path], url: str, out: Path, connections: int) -> list[str]:
    if tool == "emocaustics":
        return [sys.executable, "-m", "emocaustics", "eval", str(files[tool]), "--model",
                f"openai:standin@{url}?concurrency={connections}", "--out", str(out)]
    if tool == "inspect_ai":
        return [str(PEERS / tool / "bin" / "inspect"), "eval", f"{files[tool]}@peer_mc", "-T", f"data={files['data']}",
                "--model", "openai/standin", "-M", "responses_api=false", "--model-base-url", url,
                "--max-connections", str(connections),
                "--log-dir", str(out), "--log-format", "json", "--display", "none"]
    return [str(PEERS / tool / "bin" / "lm_eval"), "--model", "local-chat-completions", "--model_args",
            f"model=standin,base_url={url}/chat/completions,num_concurrent={connections},max_retries=1,"
            "tokenized_requests=False", "--tasks", "peer_mc", "--include_path", str(files[tool]),
            "--apply_chat_template", "--output_path", str(out)]


def accuracy(tool: str, out: Path) -> float | None:
    """The accuracy the tool itself reported, from its own output files."""
    try:
        if tool == "emocaustics":
            import polars as pl

            return float(pl.read_parquet(out / "scores.parquet")["score"].mean())
        if tool == "inspect_ai":
            log = json.loads(next(iter(sorted(out.glob("*.json")))).read_text(encoding="utf-8"))
            return float(log["results"]["scores"][0]["metrics"]["accuracy"]["value"])
        got = json.loads(next(iter(sorted(out.rglob("results_*.json")))).read_text(encoding="utf-8"))
        return float(got["results"]["peer_mc"]["exact_match,get-answer"])
    except (OSError, ValueError, KeyError, IndexError, StopIteration):
        return None


def run_tool(tool: str, server: Server, files: dict[str, Path], out: Path, connections: int) -> dict[str, Any]:
    env = dict(os.environ, EMOCAUSTICS_RESPONSE_CACHE=str(out) + "-cache", OPENAI_API_KEY="standin",
               HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    cmd = command(tool, files, server.url, out, connections)
    server.reset()
    load0 = os.getloadavg()[0]
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.time()
    proc = subprocess.run(cmd, cwd=files["data"].parent, env=env, capture_output=True, text=True)
    t_exit = time.time()
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    st = server.stats()
    first, last = st["first_request_epoch"], st["last_answer_epoch"]
    return {"rc": proc.returncode, "wall_s": round(t_exit - t0, 3),
            "cpu_s": round(ru1.ru_utime + ru1.ru_stime - ru0.ru_utime - ru0.ru_stime, 3),
            "calls": st["calls"], "questions_asked": st["questions_asked"],
            "max_asks_per_question": st["max_asks_per_question"], "unrecognised": st["unrecognised"],
            "max_in_service": st["max_in_service"], "accuracy": accuracy(tool, out),
            "first_request_s": round(first - t0, 3) if first else None,
            "after_last_answer_s": round(t_exit - last, 3) if last else None,
            "load_1m_before_after": [round(load0, 2), round(os.getloadavg()[0], 2)],
            **({"breakdown": breakdown(t0, t_exit, run_record(out)[0].get("timings"))}  # its own phase marks
               if tool == "emocaustics" else {}),
            **({"stderr_tail": proc.stderr[-1500:]} if proc.returncode else {})}


def race(sizes: list[int], tools: list[str], *, repeats: int = 3, warmups: int = 1, latency: float = 0.2,
         slots: int = 256, connections: int = 64, work: Path | None = None) -> dict[str, Any]:
    """Each size: warm-ups, then `repeats` rounds of the tools in turn; per tool the medians and the checks."""
    work = work or Path(tempfile.mkdtemp(prefix="peer-race-"))
    server = Server(latency, slots)
    per: dict[str, Any] = {}
    try:
        for n in sizes:
            files = prepare(work / f"n{n}", n)
            runs: dict[str, list[dict[str, Any]]] = {t: [] for t in tools}
            for rnd in range(warmups + repeats):
                for k in range(len(tools)):
                    tool = tools[(rnd + k) % len(tools)]
                    r = run_tool(tool, server, files, work / f"n{n}" / f"{tool}-{rnd}", connections)
                    r["warmup"] = rnd < warmups
                    runs[tool].append(r)
                    print(f"peer_race: n={n} {tool} round {rnd + 1}/{warmups + repeats}{' (warm-up)' * r['warmup']}:"
                          f" {r['wall_s']} s, {r['calls']} calls, accuracy {r['accuracy']}, rc {r['rc']}",
                          file=sys.stderr, flush=True)
            per[str(n)] = {"floor_s": floor_s(n, latency, connections), "designed_accuracy": designed_accuracy(n),
                           "tools": {t: summarise(rs, n) for t, rs in runs.items()}}
    finally:
        server.close()
    return {"figures": {"sizes": per, "latency_s": latency, "slots": slots, "connections": connections,
                        "repeats": repeats, "warmups": warmups}}


def summarise(runs: list[dict[str, Any]], n: int) -> dict[str, Any]:
    timed = [r for r in runs if not r["warmup"]]
    walls = [r["wall_s"] for r in timed]
    design = designed_accuracy(n)
    return {"wall_s": {"median": round(statistics.median(walls), 3), "min": min(walls), "max": max(walls)},
            "cpu_s_median": round(statistics.median(r["cpu_s"] for r in timed), 3),
            "one_call_per_question": all(r["rc"] == 0 and r["calls"] == n and r["questions_asked"] == n
                                         and r["max_asks_per_question"] == 1 for r in runs),
            "designed_accuracy_reported": all(r["accuracy"] is not None and abs(r["accuracy"] - design) < 1e-9
                                              for r in runs),
            "runs": runs}


def to_markdown(res: dict[str, Any]) -> str:
    f = res["figures"]
    tools = list(next(iter(f["sizes"].values()))["tools"]) if f["sizes"] else []
    head = f"| tool | {' | '.join(f'{n} question' + ('s' if n != '1' else '') for n in f['sizes'])} |"
    lines = [f"# peer_race (whole processes; stand-in {f['latency_s']} s per call, {f['slots']} slots; "
             f"{f['connections']} connections each; median of {f['repeats']} after {f['warmups']} warm-up)", "",
             head, "|---" * (len(f["sizes"]) + 1) + "|",
             "| floor (calls x latency / connections) | " + " | ".join(f"{s['floor_s']} s" for s in f["sizes"].values())
             + " |"]
    for t in tools:
        cells = []
        for s in f["sizes"].values():
            x = s["tools"][t]
            ok = x["one_call_per_question"] and x["designed_accuracy_reported"]
            held = max(r["max_in_service"] for r in x["runs"])  # the most calls the stand-in served at once
            cells.append(f"{x['wall_s']['median']} s ({held} at once)" + ("" if ok else " (CHECK FAILED)"))
        lines.append(f"| {t} | {' | '.join(cells)} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.peer_race", description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1,400,2000")
    ap.add_argument("--tools", default=",".join(TOOLS))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--warmups", type=int, default=1)
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--slots", type=int, default=256)
    ap.add_argument("--connections", type=int, default=64)
    ap.add_argument("--tag", default="", help="results file peer_race_TAG.json (e.g. smoke)")
    ap.add_argument("--install-only", action="store_true")
    ap.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)  # the stand-in's own process
    a = ap.parse_args(argv)
    if a.serve:
        asyncio.run(serve(a.latency, a.slots, 0, kind=MCStandin))
        return 0
    tools = [t for t in a.tools.split(",") if t]
    versions = {t: ensure_peer(t) for t in tools if t != "emocaustics"}
    if a.install_only:
        print(json.dumps(versions))
        return 0
    t0 = time.time()
    with tempfile.TemporaryDirectory(prefix="peer-race-") as tmp:
        res = race([int(x) for x in a.sizes.split(",")], tools, repeats=a.repeats, warmups=a.warmups,
                   latency=a.latency, slots=a.slots, connections=a.connections, work=Path(tmp))
    res = {"name": "peer_race", **res, "versions": versions,
           "inputs": {"command": " ".join(["python -m benchmarks.peer_race", *(argv if argv is not None
                                                                                 else sys.argv[1:])]),
                      "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                      "seconds_total": round(time.time() - t0, 1), "cpus": os.cpu_count()}}
    name = "peer_race" + (f"_{a.tag}" if a.tag else "")
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{name}.json").write_text(json.dumps(res, indent=1), encoding="utf-8")
    md = to_markdown(res)
    (RESULTS / f"{name}.md").write_text(md, encoding="utf-8")
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
