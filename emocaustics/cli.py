"""`emocaustics` command line: one sub-command group per subpackage, each registered by its own `cli` module.

Sub-command modules keep heavy imports (ray, torch, vllm) inside their handlers so that `--help` and bad-argument
errors stay instant.
"""

from __future__ import annotations

import argparse
import importlib
import sys

# (module, what it registers); each module has `register(subparsers)` adding its parsers with `func=` defaults.
COMMAND_MODULES = (
    "emocaustics.data.cli",
    "emocaustics.score.cli",
    "emocaustics.extract.cli",
    "emocaustics.pipeline.cli",
)


class UsageError(Exception):
    """A user mistake (bad path, unknown subset, bad spec): printed as one line, exit status 2."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="emocaustics", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:  # that command group is not built yet
                continue
            raise
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except UsageError as exc:
        print(f"emocaustics: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("emocaustics: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
