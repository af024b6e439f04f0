"""`emocaustics ui --root DIR [--out DIR] [--port N]`: the workbench, a local web page on 127.0.0.1 that processes
human-assessment rounds, validates and scores submissions of every task, and opens run folders in the viewer."""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path
from typing import Any

from emocaustics.core.clihelp import DefaultsFormatter


def register(sub: Any) -> None:
    p = sub.add_parser("ui", help="the workbench: a local web page (127.0.0.1) to process human-assessment rounds, "
                                  "validate and score submissions, and open runs in the viewer",
                       description=__doc__, formatter_class=DefaultsFormatter)
    p.add_argument("--root", required=True, metavar="DIR",
                   help="the folder the page may read from: every path it is given is relative to it, and one "
                        "outside it is refused")
    p.add_argument("--out", metavar="DIR", help="the only folder the page writes to (uploads, each job's outputs); "
                                                "default: ROOT/workbench")
    p.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: a free one)")
    p.set_defaults(func=_cmd_ui)


def _cmd_ui(args: argparse.Namespace) -> int:
    from emocaustics.cli import main
    from emocaustics.cli.view import listen, serve_until_stopped
    from emocaustics.core.errors import UsageError
    from emocaustics.ui.server import Workbench, make_server

    root = Path(args.root)
    if not root.is_dir():
        raise UsageError(f"--root {args.root}: {'not a folder' if root.exists() else 'no such folder'}")
    out = Path(args.out) if args.out else root / "workbench"
    try:
        bench = Workbench(root, out, main)  # each job calls the command line's own `main` in a worker process
    except OSError as exc:  # a file there, /proc/x, no permission
        raise UsageError(f"--out {out}: cannot be made: {exc.strerror or exc}; give a folder it may write") from None
    # SIGTERM (a service manager, `kill`) stops it as Ctrl-C does: the running jobs are ended, then it exits
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    server = listen(make_server, bench, args.port)
    print(f"workbench: http://127.0.0.1:{server.server_address[1]}/  (reads {bench.folders.root}, writes "
          f"{bench.folders.out}; Ctrl-C stops it)", flush=True)
    serve_until_stopped(server, bench.close)
    return 0
