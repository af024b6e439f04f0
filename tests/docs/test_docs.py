"""The documentation site (mkdocs.yml, docs/) and the README that leads into it.

- `mkdocs build --strict` succeeds with no warning: a broken link, a missing anchor, a page left out of the nav, a
  snippet whose file is gone, or an API reference whose object is gone fails the build;
- every `emocaustics ...` command in a fenced code block of the docs or the README parses with the real parser, a
  `run` example's job file loads, and an `eval` example builds its one-config job (task, method, options, model spec
  checked) — nothing is started;
- and runs: `run`/`eval` examples as a dry run (exit 0, nothing started: no GPU needed), the others for real where
  they are offline and read-only, and those that need a cluster or a user's files are listed (NOT_RUN) with why;
- every page the README links to exists, and the README stays a front door (at most ~10 KB).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
README = REPO / "README.md"
README_LIMIT = 10 * 1024  # the "at most ~10 KB": detail belongs on a docs page
FENCE = re.compile(r"^(?P<indent> *)(?P<fence>```+|~~~+)(?P<info>[^\n]*)\n(?P<body>.*?)^(?P=indent)(?P=fence)\s*$",
                   re.M | re.S)
ENV = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
LINK = re.compile(r"(?<!!)\[[^\]]*\]\((?P<target>[^)\s]+)\)")


def markdown_files() -> list[Path]:
    return [README, *sorted(DOCS.rglob("*.md"))]


def cli_examples(text: str) -> list[list[str]]:
    """The argument lists of the `emocaustics ...` commands in a page's fenced shell blocks (continued lines joined,
    comments and leading `VAR=value` assignments dropped; `.venv/bin/emocaustics` counts)."""
    found = []
    for block in FENCE.finditer(text):
        if block["info"].strip().split(" ")[0] not in ("", "bash", "sh", "shell", "console"):
            continue
        for line in block["body"].replace("\\\n", " ").splitlines():
            words = shlex.split(line.lstrip("$ "), comments=True)
            while words and ENV.match(words[0]):
                words.pop(0)
            if words and Path(words[0]).name == "emocaustics":
                found.append(words[1:])
    return found


def examples() -> list[tuple[str, list[str]]]:
    return [(f"{path.relative_to(REPO)}: emocaustics {shlex.join(argv)}", argv)
            for path in markdown_files() for argv in cli_examples(path.read_text(encoding="utf-8"))]


@pytest.mark.slow
def test_the_site_builds_strict_without_a_warning(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file",
                           str(REPO / "mkdocs.yml"), "--site-dir", str(tmp_path / "site")],
                          cwd=REPO, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    warnings = [line for line in proc.stderr.splitlines() if line.startswith(("WARNING", "ERROR"))]
    assert proc.returncode == 0 and not warnings, "\n".join(warnings) or proc.stderr[-3000:]
    assert (tmp_path / "site" / "index.html").is_file()
    api = (tmp_path / "site" / "api" / "index.html").read_text(encoding="utf-8")
    for name in ("eval", "run", "score", "load_run"):  # the reference is generated from emocaustics/api.py
        assert f'id="emocaustics.api.{name}"' in api, name


def test_the_docs_show_cli_examples_of_every_task():
    commands = [" ".join(argv) for _, argv in examples()]
    for task in ("sextuple", "emotion", "aer", "ecpe", "narrative", "human"):
        assert any(c.startswith(f"eval {task} ") for c in commands), f"no `emocaustics eval {task}` example"


@pytest.mark.parametrize("where,argv", examples(), ids=[w for w, _ in examples()])
def test_every_cli_example_in_the_docs_parses(where, argv):
    from emocaustics.cli import build_parser

    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # argparse names the problem on stderr and exits 2
        pytest.fail(f"{where}: does not parse (exit {exc.code})")
    if args.command == "run" and argv[1].startswith("jobs/"):
        from emocaustics.jobs.spec import load_job

        load_job(REPO / argv[1])  # a UsageError names the file and the key
    if args.command == "eval":
        from emocaustics.jobs.oneline import eval_arguments, eval_job

        eval_job(args.task, **eval_arguments(args))


def test_every_eval_option_is_documented():
    """An option added to `jobs.evaloptions.EVAL_OPTIONS` is shown in a docs page or the README (an example or a
    sentence), beside its --help."""
    from emocaustics.jobs.evaloptions import EVAL_OPTIONS

    text = "\n".join(p.read_text(encoding="utf-8") for p in markdown_files())
    missing = [o.switch for o in EVAL_OPTIONS if not re.search(rf"(?<![\w-]){re.escape(o.switch)}(?![\w-])", text)]
    assert not missing, f"eval options no docs page names: {missing}"


# Examples that are parsed (above) but not run, by command: why. Every other example runs: `run` and `eval` as a dry
# run (nothing started or written; a dry run names missing data instead of failing, and needs no GPU), the rest for
# real (offline and read-only). A new command in the docs is run, or listed here with its reason.
NOT_RUN = {
    "serve": "starts model services on a running `ray start` cluster",
    "models": "lists or stops the model services of a running Ray cluster",
    "report": "reads a run folder the example names as a placeholder (runs/quickstart/<timestamp>)",
    "compare": "reads run folders the example names as placeholders",
    "export": "reads a run folder the example names as a placeholder (tests/export runs these examples on a run)",
    "view": "serves until stopped (or writes an export) from run folders the example names as placeholders",
    "score aer": "scores a user's predictions or submission (a placeholder path, sub.jsonl)",
    "score ecpe": "scores a user's submission (sub.zip)",
    "ecpe validate": "checks a user's submission (sub.zip)",
    "aer validate": "checks a user's submission (sub.jsonl)",
    "score sextuple": "reads the `preds` folder the `eval --no-score` example before it writes",
    "human": "reads the published HIT files (not shipped) and the folders of the example before it",
    "ui": "serves the workbench page until Ctrl-C (tests/ui drive it in Chromium)",
}


SHARED_DATA = {"EMOCAUSTICS_AER_DATA": "aer", "EMOCAUSTICS_ECAC_DATA": "ecac", "EMOCAUSTICS_HUMANEVAL_DATA": "humaneval"}


def _not_run(argv: list[str]) -> str | None:
    return next((why for key, why in NOT_RUN.items() if argv[:len(key.split())] == key.split()), None)


@pytest.mark.slow
@pytest.mark.parametrize("where,argv", examples(), ids=[w for w, _ in examples()])
def test_every_cli_example_in_the_docs_runs(where, argv, monkeypatch, capsys, request):
    from emocaustics.cli import main

    why = _not_run(argv)
    if why is not None:
        pytest.skip(f"not run: {why}")
    if argv[:2] == ["data", "stats"]:
        request.getfixturevalue("published_root")  # skips, saying so, without the published EmoCaustics data
    monkeypatch.chdir(REPO)  # the examples' paths (jobs/..., datasets/...) are the repository's
    shared = REPO.parent / "shared" / "datasets"  # the local copies of the public data, where CI has them
    for variable, folder in SHARED_DATA.items():
        if variable not in os.environ and (shared / folder).is_dir():
            monkeypatch.setenv(variable, str(shared / folder))
    if argv[0] in ("run", "eval") and "--dry-run" not in argv:
        argv = [*argv, "--dry-run"]
    status = main(argv)
    out, err = capsys.readouterr()
    problems = [line for line in out.splitlines() if line.startswith("  problem ")]
    if "--dry-run" in argv and status == 2 and problems and all(": dataset: " in p for p in problems):
        pytest.skip(f"{where}: its data is not on this machine ({problems[0][:300]})")  # the dry run exits 2 then
    assert status == 0, f"{where}: exit {status}\n{err[-2000:]}"
    if "--dry-run" in argv:
        assert "dry run: nothing was started or written" in out, out[-2000:]


def test_every_page_the_readme_links_to_exists():
    text = README.read_text(encoding="utf-8")
    local = [m["target"] for m in LINK.finditer(text) if not re.match(r"[a-z]+:", m["target"])]
    assert any(t.startswith("docs/") for t in local), "the README links to no docs page"
    missing = [t for t in local if not (REPO / t.split("#", 1)[0]).exists()]
    assert not missing, f"README links to pages that do not exist: {missing}"
    for target in local:
        page, _, anchor = target.partition("#")
        if anchor and page.endswith(".md"):  # a heading's anchor as mkdocs' toc makes it
            slugs = {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
                     for h in re.findall(r"^#+ (.*)$", (REPO / page).read_text(encoding="utf-8"), re.M)}
            assert anchor in slugs, f"README links to {target}: no such heading (has {sorted(slugs)})"


def test_the_readme_is_a_front_door():
    size = len(README.read_bytes())
    assert size <= README_LIMIT, (f"README.md is {size} bytes (limit {README_LIMIT}): move the detail to a page "
                                  "under docs/ and link it")
    text = README.read_text(encoding="utf-8")
    for command in ("make demo", "make test"):
        assert command in text, command
