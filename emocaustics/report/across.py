"""The viewer across runs (`emocaustics view RUN_A RUN_B ...`): the configs that `report.compare` pairs (same label,
or `--pair`), joined into groups (a config with every config it is paired with: with two runs, the pair), and each
group's samples lined up by what compare pairs them by (task, sample id, and content where the runs recorded it).

Its documents, served by `view.server` like a single run's (`view.data.ViewData`):

    index        the runs (folder, models) and the groups (task, one member per config: run, label, model; counts)
    x/<g>        group g's samples: per member its status, score (a failure counts 0, as in compare) and reason,
                 or nothing where the run lacks the sample; whether the members' answers differ
    x/<g>/<k>    sample k of group g in every member's run: input, gold, prediction, score, reason, each call's prompt

It lives beside `compare.py` because it reads compare's pairing (a second one would pair differently).
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import polars as pl

from emocaustics.core.errors import UsageError
from emocaustics.evallog.read import RunLog
from emocaustics.report.compare import Pairs, paired
from emocaustics.view.data import Documents, natural, task_sections


def _check_run(folder: Path) -> None:
    if not folder.is_dir():
        raise UsageError(f"{folder}: no such folder (give run folders that `emocaustics run` or `eval` wrote)")
    lacks = [name for name in ("scores.parquet", "evallog") if not (folder / name).exists()]
    if lacks:
        raise UsageError(f"{folder} is not a finished run folder (no {' and no '.join(lacks)}); give run "
                         "folders that `emocaustics run` or `eval` wrote")


def _answer(text: str | None) -> str | None:
    """A prediction as canonical JSON, so that two runs' equal answers compare equal however they were written."""
    if text is None:
        return None
    try:
        return json.dumps(json.loads(text), sort_keys=True, ensure_ascii=False)
    except ValueError:
        return text


def _groups(matched: list[tuple[str, str]]) -> list[list[str]]:
    """The paired configs joined into groups (connected by any pair), in the order the pairs come."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    keys = list(dict.fromkeys(k for pair in matched for k in pair))
    at = {k: i for i, k in enumerate(keys)}
    edges = coo_matrix(([1] * len(matched), ([at[a] for a, _ in matched], [at[b] for _, b in matched])),
                       shape=(len(keys), len(keys)))
    out: dict[int, list[str]] = {}
    for key, group in zip(keys, connected_components(edges, directed=False)[1]):
        out.setdefault(group, []).append(key)
    return list(out.values())


class Across(Documents):
    list_prefix = sample_prefix = "x"

    def __init__(self, run_dirs: list[Path], pairs: Pairs | None = None) -> None:
        for folder in run_dirs:
            _check_run(folder)
        self.dirs = list(run_dirs)
        got = paired(self.dirs, pairs, "view")
        self.names, self.rows = got.names, got.rows
        self.logs = {name: RunLog(d) for name, d in zip(self.names, self.dirs)}
        order = {k: n for n, k in enumerate(got.configs.select(pl.col("run") + "\t" + pl.col("config")).to_series())}
        self.groups = [sorted(g, key=order.__getitem__) for g in _groups(got.matched)]
        folders = ", ".join(str(d) for d in self.dirs)
        if not self.groups:
            labels = "; ".join(f"{d}: {', '.join(got.configs.filter(pl.col('run') == n)['config'].to_list())}"
                               for d, n in zip(self.dirs, self.names))
            raise UsageError(f"no config of one run has a partner in another (the same label, or one that "
                             f"--pair LABEL_A LABEL_B names): {labels}")
        self.table = functools.cache(self._table)  # each made once, when first asked
        self.member = functools.cache(self._member)
        if not any(r["cells"].count(None) < len(r["cells"]) - 1 for g in range(len(self.groups))
                   for r in self.table(g)["rows"]):
            raise UsageError(f"the runs {folders} share no sample (by task and sample id, and content where "
                             "the runs recorded it): nothing to show side by side")

    def _member(self, key: str) -> dict[str, Any]:
        """A config's header: its run, label, task, method, and model (the spec the run recorded in its provenance,
        credentials already out of it, else the job's model name)."""
        from emocaustics.core.provenance import read

        run, label = key.split("\t", 1)
        rec = self.logs[run].records.get(label, {})
        folder = self.dirs[self.names.index(run)]
        try:
            model = (read(folder / "predictions" / label) or {}).get("model") or rec.get("model")
        except UsageError:
            model = rec.get("model")
        return {"run": run, "label": label, "path": str(folder), "model": model, "method": rec.get("method"),
                "task": rec.get("task")}

    def group_of(self, run: str, label: str) -> int | None:
        return next((g for g, keys in enumerate(self.groups) if f"{run}\t{label}" in keys), None)

    def index(self) -> dict[str, Any]:
        runs = [{"name": n, "path": str(d),
                 "models": sorted({m for g in self.groups for k in g
                                   if k.startswith(n + "\t") and (m := self.member(k)["model"])})}
                for n, d in zip(self.names, self.dirs)]
        groups = []
        for g, keys in enumerate(self.groups):
            rows = self.table(g)["rows"]
            groups.append({"g": g, "task": self.table(g)["task"], "members": [self.member(k) for k in keys],
                           "samples": len(rows), "shared": sum(1 for r in rows if None not in r["cells"])})
        return {"across": True, "run": f"{len(self.names)} runs", "runs": runs, "groups": groups}

    def _table(self, g: int) -> dict[str, Any]:
        """Group g's samples, one row per item any member has, in natural id order."""
        keys = self.groups[g]
        mine = self.rows.filter(pl.col("key").is_in(keys))
        cells: dict[str, dict[str, Any]] = {}
        for key in keys:
            run, label = key.split("\t", 1)
            log = self.logs[run]
            status = log.scores.filter(pl.col("run") == label).select(
                pl.col("sample_id").cast(pl.Utf8), "failed", "status", "reason")
            known = {r["sample_id"]: r for r in status.to_dicts()}
            answers = dict(log.samples(label).select("sample_id", "prediction").iter_rows())
            for r in mine.filter(pl.col("key") == key).iter_rows(named=True):
                s = known.get(r["sample_id"], {})
                cells.setdefault(r["item"], {"sample_id": r["sample_id"]})[key] = {
                    "score": r["score"], "failed": bool(s.get("failed")), "status": s.get("status"),
                    "reason": s.get("reason"), "answer": _answer(answers.get(r["sample_id"]))}
        rows = []
        for item, got in sorted(cells.items(), key=lambda kv: natural(kv[1]["sample_id"])):
            present = [got[k] for k in keys if k in got]
            rows.append({"sample_id": got["sample_id"], "item": item,
                         "answers_differ": len({c.pop("answer") for c in present}) > 1,
                         "cells": [got.get(k) for k in keys]})
        return {"g": g, "task": mine["task"][0] if mine.height else None,
                "members": [self.member(k) for k in keys], "rows": rows}

    def sample(self, g: int, k: int) -> dict[str, Any]:
        """Sample k of group g as each member's run logged and scored it (None where the run lacks it)."""
        table = self.table(g)
        row = table["rows"][k]
        out = []
        for key, cell in zip(self.groups[g], row["cells"]):
            if cell is None:
                out.append(None)
                continue
            run, label = key.split("\t", 1)
            got = self.logs[run].sample(label, row["sample_id"])
            got["sections"] = task_sections(got)
            got["reason"] = got.get("reason") or cell["reason"]
            out.append(got)
        return {"g": g, "k": k, "sample_id": row["sample_id"], "members": table["members"], "samples": out}

    def count(self) -> int:
        return len(self.groups)
