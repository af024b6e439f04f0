"""Round 1 of the published free-topic experiment against a straightforward re-computation of the method written
here with plain Python loops (json, math; no numpy, pandas, polars or scipy): z-scores, QC, passed / failed workers
and assignments, pass rates, system scores and order, and the significance p-value matrix agree to 1e-9."""

from __future__ import annotations

import json
import math
from functools import lru_cache

import pytest

from emocaustics.tasks.human.data import read_hits
from emocaustics.tasks.human.method import process
from emocaustics.tasks.human.significance import system_significance

TOL = 1e-9


# -- plain-Python Mann-Whitney U, following scipy's "auto" rule ---------------------------------------------------
def ranks(values: list[float]) -> tuple[list[float], list[int]]:
    order = sorted(range(len(values)), key=lambda i: values[i])
    out = [0.0] * len(values)
    ties = []
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            out[order[k]] = (i + j) / 2 + 1
        ties.append(j - i + 1)
        i = j + 1
    return out, ties


@lru_cache(maxsize=None)
def count_u(u: int, m: int, n: int) -> int:
    """Orderings of m x-values and n y-values with U = u (x above y pairs)."""
    if u < 0 or u > m * n:
        return 0
    if m == 0 or n == 0:
        return 1 if u == 0 else 0
    return count_u(u - n, m - 1, n) + count_u(u, m, n - 1)  # the largest value is an x (beats n) or a y


def mwu_p(x: list[float], y: list[float], alternative: str) -> float:
    n1, n2 = len(x), len(y)
    r, ties = ranks(x + y)
    u1 = sum(r[:n1]) - n1 * (n1 + 1) / 2
    u = u1 if alternative == "greater" else n1 * n2 - u1
    if (n1 > 8 and n2 > 8) or any(t > 1 for t in ties):
        n = n1 + n2
        s = math.sqrt(n1 * n2 / 12 * ((n + 1) - sum(t ** 3 - t for t in ties) / (n * (n - 1))))
        num = u - n1 * n2 / 2 - 0.5
        if s == 0:  # every value tied: scipy divides by zero, z = -inf (num is -0.5), p = 1
            z = math.copysign(math.inf, num)
        else:
            z = num / s
        return min(1.0, max(0.0, 0.5 * math.erfc(z / math.sqrt(2))))
    total = math.comb(n1 + n2, n1)
    return min(1.0, sum(count_u(k, n1, n2) for k in range(int(u), n1 * n2 + 1)) / total)


def test_plain_mwu_matches_textbook_cases():
    assert mwu_p([3, 4, 5], [0, 1, 2], "greater") == pytest.approx(1 / 20)  # exact, no ties
    assert mwu_p([0, 1], [2, 3, 4, 5, 6], "less") == pytest.approx(1 / 21)


# -- the method, re-computed ----------------------------------------------------------------------------------------
def recompute(path: str) -> dict:
    with open(path, encoding="utf-8") as fh:
        obj = json.load(fh)
    meta, data = obj["metadata"], obj["data"]
    names = list(meta["score"])
    sorted_scores = meta.get("sorted_scores") or names
    qc_model, models = meta["qc-model"], meta["model"]
    convs = []  # (assignment, hit, worker, model, {score: reversed value})
    for rec in data:
        for c in rec["result"]:
            vals = {}
            for s in names:
                spec = meta["score"][s]
                vals[s] = c["score"][s] if spec["positive"] else spec["max"] - c["score"][s]
            convs.append((rec["assignment"], rec["hit"], rec["worker"], c["model"], vals))
    by_worker: dict[str, list[float]] = {}
    for _, _, w, _, vals in convs:
        by_worker.setdefault(w, []).extend(vals[s] for s in names)
    mean = {w: sum(v) / len(v) for w, v in by_worker.items()}
    sd = {w: math.sqrt(sum((x - mean[w]) ** 2 for x in v) / (len(v) - 1)) for w, v in by_worker.items()}
    z = [{s: (vals[s] - mean[w]) / (sd[w] + 1e-6) for s in names} for _, _, w, _, vals in convs]
    qc_scores = [s for s in names if meta["score"][s]["qc"]]
    p_of = {}
    for w in by_worker:
        if sd[w] == 0:
            p_of[w] = 1.0
            continue
        qx = [z[i][s] for i, c in enumerate(convs) if c[2] == w and c[3] == qc_model for s in qc_scores]
        sx = [z[i][s] for i, c in enumerate(convs) if c[2] == w and c[3] in models for s in qc_scores]
        p_of[w] = mwu_p(qx, sx, "less")
    passed = sorted(w for w, p in p_of.items() if p < 0.05)
    failed = sorted(w for w in by_worker if w not in passed)
    keep = [i for i, c in enumerate(convs) if c[2] in passed]
    system = {}
    for m in models:
        cells = [z[i][s] for i in keep if convs[i][3] == m for s in sorted_scores]
        system[m] = {"N": len(cells), "z": sum(cells) / len(cells),
                     **{s: sum(z[i][s] for i in keep if convs[i][3] == m) /
                        sum(1 for i in keep if convs[i][3] == m) for s in sorted_scores}}
    order = sorted(models, key=lambda m: -system[m]["z"])
    # a conversation's mean z, taken as (mean raw - mean) / (sd + 1e-6) (equal in real arithmetic to the mean of its
    # z values; see method.standardise for why rounding must not decide ties)
    conv_z = {m: [(sum(convs[i][4].values()) / len(names) - mean[convs[i][2]]) / (sd[convs[i][2]] + 1e-6)
                  for i in keep if convs[i][3] == m] for m in models}
    pmat = [[1.0 if a == b else mwu_p(conv_z[a], conv_z[b], "greater") for b in order] for a in order]
    hits_pass = {convs[i][1] for i in keep}
    hits_fail = {c[1] for c in convs if c[2] in failed}
    return {"z": z, "p": p_of, "passed": passed, "failed": failed,
            "passed_assign": sorted({convs[i][0] for i in keep}),
            "failed_assign": sorted({c[0] for c in convs if c[2] in failed}),
            "hit_rate": len(hits_pass) / (len(hits_pass) + len(hits_fail)),
            "worker_rate": len(passed) / len(by_worker), "system": system, "order": order, "pmat": pmat,
            "names": names}


def test_round1_matches_the_plain_recomputation(humaneval_root):
    path = humaneval_root / "hits_data_FreeTopicRound1.json"
    want = recompute(str(path))
    got = process(read_hits(path))
    # z-scores, every rating
    conv = got.conversations
    assert conv.height == len(want["z"]) == 304 * 6
    for s in want["names"]:
        ours = conv.get_column(f"z:{s}").to_list()
        assert max(abs(a - b[s]) for a, b in zip(ours, want["z"])) < TOL
    # QC p-values, passed / failed workers and assignments
    qc = dict(got.qc.select("worker", "p_value").iter_rows())
    assert set(qc) == set(want["p"])
    assert max(abs(qc[w] - want["p"][w]) for w in qc) < TOL
    assert got.passed_workers == want["passed"] and got.failed_workers == want["failed"]
    assert got.passed_assignments == want["passed_assign"] and got.failed_assignments == want["failed_assign"]
    assert len(got.passed_workers) + len(got.failed_workers) == 248
    # pass rates
    rates = {r[""]: r["passrate"] for r in got.passrate.iter_rows(named=True)}
    assert abs(rates["HIT"] - want["hit_rate"]) < TOL and abs(rates["Worker"] - want["worker_rate"]) < TOL
    # system scores and order
    table = got.scores["passed"][0]
    assert table.get_column("model").to_list() == want["order"]
    for row in table.iter_rows(named=True):
        exp = want["system"][row["model"]]
        assert row["N"] == exp["N"]
        for col in ("z", *[c for c in table.columns if c not in ("model", "N", "z")]):
            assert abs(row[col] - exp[col]) < TOL, (row["model"], col)
    # the p-value matrix of the significance test
    p = system_significance(got.group_rows("passed"), got.ranked_models)
    assert max(abs(p[i][j] - want["pmat"][i][j]) for i in range(10) for j in range(10)) < TOL


def test_round1_figures(humaneval_root):
    """The figures this data gives (recorded in datasets/human/README.md)."""
    got = process(read_hits(humaneval_root / "hits_data_FreeTopicRound1.json"))
    rates = {r[""]: (r["passed"], r["total"]) for r in got.passrate.iter_rows(named=True)}
    assert rates == {"HIT": (215, 304), "Worker": (173, 248)}
    assert got.ranked_models[:3] == ["biencoder", "polyencoder", "biencoder_p"]
    # round 2 was published with metadata.ranking = round 1's order: ours must agree
    r2 = read_hits(humaneval_root / "hits_data_FreeTopicRound2.json")
    assert list(r2.metadata.ranking or ()) == got.ranked_models
