"""`emocaustics data fetch TASK [--to DIR]`: every task's published data, one verb (`core.datasource` does the work).

TASK is a task name (`emocaustics tasks`; in-tree or a plug-in) or a data source's own name (`emocaustics`, `ecac`,
`humaneval`, `aer`): the sources the task declares (`Task.data_sources`) are downloaded, verified and unpacked into
the fetch cache, where the task's loader finds them without `--data`, or into `--to DIR`. A task package may add its
own `data` sub-verbs through `register_data(data_subparsers)` in its `cli` module (EmoCaustics: `data stats`).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from emocaustics.core.clihelp import DefaultsFormatter
from emocaustics.core.errors import UsageError

if TYPE_CHECKING:
    from emocaustics.core.datasource import DataSource

def register(subparsers: Any) -> Any:
    """Add `data` with its `fetch` verb; returns the `data` sub-parsers, for the tasks' own `data` verbs."""
    data = subparsers.add_parser("data", help="fetch a task's published data (`data fetch TASK`), and inspect it")
    sub = data.add_subparsers(dest="data_command", required=True)
    f = sub.add_parser(
        "fetch", help="download, verify and unpack a task's data into the fetch cache (or --to DIR)",
        description="Download the data a task declares (its URL(s), at a pinned version), check its sha256 when "
                    "one is declared, unpack what the task needs and write SOURCE.md (source, licence). Into the "
                    "fetch cache ($EMOCAUSTICS_CACHE/datasets/<name>, default ~/.cache/emocaustics), where the "
                    "task finds it without --data, or into --to DIR.",
        formatter_class=DefaultsFormatter,
        epilog="exit status: 0 fetched; 2 unknown task, nothing to fetch, a download that failed, a checksum that "
               "does not match or an archive without the data (nothing written)")
    f.add_argument("task", metavar="TASK",
                   help="a task (see `emocaustics tasks`) or a data source's name (emocaustics, ecac, humaneval)")
    f.add_argument("--to", metavar="DIR", help="folder to write (replaced); default: the fetch cache")
    f.add_argument("--url", action="append", metavar="URL",
                   help="fetch from this URL instead of the declared ones (a mirror, or file:// for a local copy of "
                        "the archive); repeat to try several in order; a declared sha256 still applies")
    f.set_defaults(func=_fetch)
    return sub


def _fetch(args: argparse.Namespace) -> int:
    fetch_data(args.task, to=args.to, urls=args.url)
    return 0


def sources_for(name: str) -> list[DataSource]:
    """The data sources of a task, or the one source of that name; a UsageError naming what can be fetched."""
    from emocaustics.core.task import get_task, is_task_file, task_names

    names = task_names()
    if name in names or is_task_file(name):
        sources = list(get_task(name).data.data_sources)
        if not sources:
            raise UsageError(f"task {name!r} declares no data to fetch (its data ships with the project or is your "
                             "own: give it as the dataset's `data`)")
        return sources
    by_name = {s.name: s for t in names for s in get_task(t).data.data_sources}
    if name in by_name:
        return [by_name[name]]
    with_data = sorted(t for t in names if get_task(t).data.data_sources)
    raise UsageError(f"unknown task or data source {name!r}; tasks with data to fetch: {', '.join(with_data)}; "
                     f"data sources: {', '.join(sorted(by_name))}")


def fetch_data(name: str, *, to: str | Path | None = None, urls: list[str] | None = None) -> list[Path]:
    """Fetch every source of `name` (into `to`, or `to/<source>` when the task has several); prints where each went
    and how a job or command finds it."""
    sources = sources_for(name)
    if urls and len(sources) > 1:
        raise UsageError(f"{name!r} has {len(sources)} data sources ({', '.join(s.name for s in sources)}): name "
                         "one of them to fetch it from --url")
    done = []
    for source in sources:
        dest = None if to is None else Path(to) if len(sources) == 1 else Path(to) / source.name
        path = source.fetch(dest, urls=tuple(urls) if urls else None)
        where = ("the fetch cache: found without --data" if dest is None else
                 f"use it with {source.env_var}={path} or --data {path}")
        print(f"{source.title}: fetched into {path} ({where}); source and licence in {path / 'SOURCE.md'}")
        done.append(path)
    return done
