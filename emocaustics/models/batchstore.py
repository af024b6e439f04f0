"""`batches.jsonl`: the batches a `batch: true` model sent (models/batch.py), kept beside the response cache so that a
killed run's rerun or `--resume` follows its pending batches instead of sending their requests again."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from emocaustics.models.base import ChatRequest, Sampling

STORE = "batches.jsonl"


class BatchStore:
    """`batches.jsonl` (one event a line: submitted / finished) and the requests of each batch in `batches/`."""

    def __init__(self, folder: Path | str) -> None:
        self.folder = Path(folder)
        self.path = self.folder / STORE

    def _append(self, row: dict[str, Any]) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")

    def write_requests(self, local: str, items: list[tuple[str, ChatRequest]]) -> None:
        folder = self.folder / "batches"
        folder.mkdir(parents=True, exist_ok=True)
        with (folder / f"{local}.jsonl").open("w", encoding="utf-8") as fh:
            for key, r in items:
                fh.write(json.dumps({"key": key, "messages": list(r.messages), "schema": r.schema,
                                     "sampling": r.sampling.key()}, ensure_ascii=False) + "\n")

    def submitted(self, endpoint: str, batch_id: str, local: str, n: int) -> None:
        self._append({"event": "submitted", "endpoint": endpoint, "batch_id": batch_id, "requests": local, "n": n,
                      "at": time.time()})

    def finished(self, endpoint: str, batch_id: str, status: str) -> None:
        self._append({"event": "finished", "endpoint": endpoint, "batch_id": batch_id, "status": status,
                      "at": time.time()})

    def pending(self, endpoint: str) -> dict[str, dict[str, ChatRequest]]:
        """Batches of `endpoint` submitted and not finished: batch id -> {key: request}."""
        if not self.path.exists():
            return {}
        open_: dict[str, str] = {}
        for raw in self.path.read_text(encoding="utf-8").splitlines():
            try:
                row = json.loads(raw)
            except ValueError:
                continue  # a line cut by a kill
            if row.get("endpoint") != endpoint:
                continue
            if row.get("event") == "submitted":
                open_[row["batch_id"]] = row["requests"]
            elif row.get("event") == "finished":
                open_.pop(row["batch_id"], None)
        out: dict[str, dict[str, ChatRequest]] = {}
        for batch_id, local in open_.items():
            path = self.folder / "batches" / f"{local}.jsonl"
            if not path.exists():
                continue
            reqs = {}
            for raw in path.read_text(encoding="utf-8").splitlines():
                if raw.strip():
                    d = json.loads(raw)
                    reqs[d["key"]] = ChatRequest(messages=tuple(d["messages"]), schema=d["schema"],
                                                 sampling=Sampling(**d["sampling"]))
            out[batch_id] = reqs
        return out
