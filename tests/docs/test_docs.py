"""The documentation site (mkdocs.yml, docs/) and the README that leads into it.

- `mkdocs build --strict` succeeds with no warning: a broken link, a missing anchor, a page left out of the nav, a
  snippet whose file is gone, or an API reference whose object is gone fails the build;
- every `emocaustics ...` command in a fenced code block of the docs or the README parses with the real parser, a
  `run` example's job file loads, and an `eval` example builds its one-config job (task, method, options, model spec
  checked) — nothing is started;
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
    for name in ("eval", "run", "load_run"):  # the reference is generated from emocaustics/api.py
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
        from emocaustics.jobs.oneline import eval_job, parse_assignments

        eval_job(args.task, model=args.model, method=args.method, split=args.split, limit=args.limit,
                 ids=args.ids, options=parse_assignments(args.options, "-T"),
                 dataset=parse_assignments(args.dataset, "-D"), judge=args.judge, embedder=args.embedder)


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
