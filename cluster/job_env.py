"""The runtime env of a job sent by `jobs/submit.sh`: `python cluster/job_env.py OUT_FILE SUBMIT_DIR`.

A submitted job runs on the head in a copy of the project, with the head's environment, not the submitter's: what it
needs from the submitter travels in the runtime env's `env_vars`. Forwarded: every `EMOCAUSTICS_*` variable (data
folders, cache, API key; not the few that only steer `submit.sh`), the providers' API keys and any names listed in
`EMOCAUSTICS_FORWARD_ENV`, plus `EMOCAUSTICS_BASE_DIR` = the folder the user submitted from (the job resolves a
relative `output:` / `--out` there, so its results land where a local run from that folder would put them).

`$EMOCAUSTICS_RUNTIME_ENV` (a runtime env YAML such as cluster/runtime_env.yaml) is merged in; the submitter's
variables win over its `env_vars`. The result is written to OUT_FILE (created 0600 by the caller, removed after the
submit) and never to a command line, where `ps` would show the keys; only the variables' names are printed.
Standard library only (PyYAML when a runtime env file is given): the submitting machine may not have the project
installed.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping

SUBMIT_ONLY = frozenset({"EMOCAUSTICS_PY", "EMOCAUSTICS_RAY", "EMOCAUSTICS_RUNTIME_ENV", "EMOCAUSTICS_FORWARD_ENV"})
API_KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "HF_TOKEN")


def forwarded(environ: Mapping[str, str]) -> dict[str, str]:
    names = {k for k in environ if k.startswith("EMOCAUSTICS_") and k not in SUBMIT_ONLY}
    names |= {k for k in API_KEYS if k in environ}
    names |= {k for k in environ.get("EMOCAUSTICS_FORWARD_ENV", "").split() if k in environ}
    return {k: environ[k] for k in sorted(names)}


def runtime_env(environ: Mapping[str, str], submit_dir: str) -> dict:
    spec = environ.get("EMOCAUSTICS_RUNTIME_ENV")
    runtime: dict = {}
    if spec:
        import yaml

        with open(spec, encoding="utf-8") as fh:
            runtime = yaml.safe_load(fh) or {}
        if not isinstance(runtime, dict) or not isinstance(runtime.get("env_vars", {}), dict):
            raise SystemExit(f"{spec}: a runtime env is a mapping (working_dir, pip, env_vars: a mapping, ...)")
    env = {**runtime.get("env_vars", {}), **forwarded(environ)}
    env.setdefault("EMOCAUSTICS_BASE_DIR", submit_dir)
    env["EMOCAUSTICS_SUBMITTED"] = "1"  # the job's resume hint then says to send it again with submit.sh
    runtime["env_vars"] = {k: str(v) for k, v in env.items()}
    return runtime


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print("usage: python cluster/job_env.py OUT_FILE SUBMIT_DIR", file=sys.stderr)
        return 2
    runtime = runtime_env(os.environ, argv[2])
    with open(argv[1], "w", encoding="utf-8") as fh:
        json.dump(runtime, fh)
    names = " ".join(sorted(runtime["env_vars"]))
    print(f"runtime env of the job: env_vars {names} (values not shown)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
