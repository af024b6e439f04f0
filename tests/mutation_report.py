"""The kill rate per module of the last `mutmut run` (`make mutation`), and the mutants that survived.

Reads `mutmut results --all true` (run from the repository root, where `mutants/` lies). A mutant counts as killed
when a test failed on it or it timed out (a true timeout once `tests/mutation_recheck.py` has rechecked mutmut's
fork-runner timeouts, as `make mutation` does); `no tests` (no test covers the mutated line) counts as survived,
since no test would see the change; mutants not checked yet are left out and counted apart. Optional arguments:
mutant-name globs, as given to `mutmut run`, to report on those only. Writes `mutants/report.md` (the table and the
survivors, for triage: kill each with a test, or list it as equivalent with the reason).
"""

from __future__ import annotations

import fnmatch
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

KILLED = {"killed", "timeout", "segfault", "caught by type check"}
UNCHECKED = {"not checked", "skipped", "check was interrupted by user"}


def results() -> list[tuple[str, str]]:
    out = subprocess.run([str(Path(sys.executable).with_name("mutmut")), "results", "--all", "true"],
                         capture_output=True, text=True, check=True).stdout
    rows = []
    for line in out.splitlines():
        name, sep, status = line.strip().rpartition(": ")
        if sep and "__mutmut_" in name:
            rows.append((name, status.strip()))
    return rows


def main(patterns: list[str]) -> int:
    rows = [(n, s) for n, s in results() if not patterns or any(fnmatch.fnmatch(n, p) for p in patterns)]
    by_module: dict[str, Counter[str]] = defaultdict(Counter)
    survivors: list[tuple[str, str]] = []
    for name, status in rows:
        module = name.rsplit(".", 1)[0]
        by_module[module][status] += 1
        if status not in KILLED | UNCHECKED:
            survivors.append((name, status))
    lines = ["| module | mutants | killed | survived | not checked | kill rate |", "|---|---:|---:|---:|---:|---:|"]
    total = Counter()
    for module, c in sorted(by_module.items()):
        killed = sum(c[s] for s in KILLED)
        unchecked = sum(c[s] for s in UNCHECKED)
        checked = sum(c.values()) - unchecked
        total.update(killed=killed, checked=checked, unchecked=unchecked)
        rate = f"{killed / checked:.1%}" if checked else "n/a"
        lines.append(f"| {module} | {sum(c.values())} | {killed} | {checked - killed} | {unchecked} | {rate} |")
    rate = f"{total['killed'] / total['checked']:.1%}" if total["checked"] else "n/a"
    lines.append(f"| all | {total['checked'] + total['unchecked']} | {total['killed']} | "
                 f"{total['checked'] - total['killed']} | {total['unchecked']} | {rate} |")
    lines += ["", "Survivors (`mutmut show NAME` prints the change):", ""]
    lines += [f"- `{n}` ({s})" for n, s in survivors] or ["- none"]
    report = "\n".join(lines) + "\n"
    print(report)
    Path("mutants").mkdir(exist_ok=True)
    Path("mutants/report.md").write_text(report, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
