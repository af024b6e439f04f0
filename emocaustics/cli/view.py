"""`emocaustics view RUN_DIR [RUN_DIR ...] [--pair A B] [--port N] [--export DIR]`: the eval log of a run in a local
web viewer; of several runs, their paired configs' samples side by side (`report.across`)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from emocaustics.core.clihelp import DefaultsFormatter


def register(sub: Any) -> None:
    p = sub.add_parser("view", help="open a run's eval log (every sample's calls, gold and prediction) in a local "
                                    "web viewer on 127.0.0.1", formatter_class=DefaultsFormatter)
    p.add_argument("run_dirs", metavar="RUN_DIR", nargs="+",
                   help="a run folder of `emocaustics run` (it holds evallog/); several: each sample across the runs, "
                        "side by side, for the configs `compare` pairs (the same label, or --pair)")
    p.add_argument("--pair", nargs=2, action="append", metavar=("LABEL_A", "LABEL_B"), default=None,
                   help="line up the config labelled LABEL_A of a run with the one labelled LABEL_B of a later run "
                        "given, instead of pairing by label (repeatable; as `compare --pair`)")
    p.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: a free one)")
    p.add_argument("--export", metavar="DIR", help="write the viewer as static files into DIR (open DIR/index.html "
                                                   "from disk or share the folder) instead of serving it")
    p.set_defaults(func=_cmd_view)


def _cmd_view(args: argparse.Namespace) -> int:
    from emocaustics.core.errors import UsageError
    from emocaustics.evallog.read import RunLog
    from emocaustics.view.data import ViewData
    from emocaustics.view.server import export, make_server

    dirs = [Path(d) for d in args.run_dirs]
    if len(dirs) > 1:
        from emocaustics.report.across import Across

        view: Any = Across(dirs, args.pair)
    elif args.pair:
        raise UsageError("view --pair lines up the configs of different runs: give two run folders or more")
    else:
        view = ViewData(RunLog(dirs[0]))
    if args.export:
        page = export(view, Path(args.export))
        print(f"viewer written: {page.resolve().as_uri()}", flush=True)
        return 0
    server = listen(make_server, view, args.port)
    print(f"viewer: http://127.0.0.1:{server.server_address[1]}/  (Ctrl-C stops it)", flush=True)
    serve_until_stopped(server)
    return 0


def listen(make_server: Any, what: Any, port: int) -> Any:
    """`make_server(what, port)` on loopback (the viewer's, the workbench's), or one line naming the port."""
    from emocaustics.core.errors import UsageError

    try:
        return make_server(what, port)
    except (OSError, OverflowError) as exc:  # a port in use, one below 1024 without the right, one past 65535
        cause = getattr(exc, "strerror", None) or exc
        raise UsageError(f"--port {port}: cannot listen on 127.0.0.1:{port}: {cause}; give another port, "
                         "or --port 0 for a free one") from None


def serve_until_stopped(server: Any, close: Any = None) -> None:
    """Serve until Ctrl-C, then close the server (and `close()`, what the server's handlers used)."""
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        if close is not None:
            close()
