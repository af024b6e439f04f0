"""A local sentence-transformers embedder in a child process (`EmbedderProcess`), beside the event loop that drives
a run's LLM calls (`embedfeed.py` feeds it), and the daemon thread that waits on it."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

# Encoder batch for a task's side texts on a CPU: a batch computes every text at its longest text's length, and side
# texts run from a few tokens to the 256-token cap. Measured with minilm on the 854 utterances of paper-100's first 50
# dialogues (EmoCaustics), 2 cores: batch 32 18.5 s, 16 14.9 s, 8 11.8 s, 4 10.3 s, 1 13.0 s. (Scoring's short texts
# keep the embedder's 32: at 4 the whole-dataset scoring benchmark took 498 s instead of 330.)
CPU_SIDE_TEXT_BATCH = 4
# Working ahead (`rag`, replicas), the feed encodes whole samples together, at least `embedfeed.GROUP_TEXTS` texts
# per encode, which sorts them by length across samples, in batches of GROUP_BATCH on a CPU. Measured with minilm on
# the 2,100 utterances of race_bench's tenfold rag dialogues that retrieve (longer than 20 utterances), 2 cores, one
# encode after another in one process: per sample at batch 4 13.5 and 15.5 s; groups of at least 1,024 texts at batch 32
# 9.6 s (16: 9.7 s); groups of 256 14.6 s, of 512 11.1 s; all 2,100 in one encode 9.4 and 9.9 s.
GROUP_BATCH = 32


class EmbedderProcess:
    """A local sentence-transformers model in a child process: its import and load (torch, transformers: seconds of
    CPU) and every encode run beside the event loop that drives the LLM calls, not under the same GIL. The child is
    daemonic and is stopped without waiting for its work, so a run whose samples never needed embeddings does not
    wait for the model to load. Its standard output goes to standard error (`--json` keeps stdout clean).

    One per (spec, nice, threads) per process, kept for the next feed (`shared`): a job's configs that embed used to
    start and load their own, 5-10 s of CPU each on 2 cores, beside the first calls of every such config (issue 31)."""

    _shared: dict[tuple[str, int, int | None], "EmbedderProcess"] = {}

    def __init__(self, spec: str, nice: int = 0, threads: int | None = None) -> None:
        import multiprocessing as mp

        ctx = mp.get_context("spawn")
        self._conn, child = ctx.Pipe()
        self._proc = ctx.Process(target=_serve, args=(spec, child, nice, threads), daemon=True,
                                 name="emocaustics-embedder")
        self._proc.start()
        child.close()
        self._lock = threading.Lock()
        self._ready = False

    @classmethod
    def shared(cls, spec: str, nice: int = 0, threads: int | None = None) -> "EmbedderProcess":
        """This process's embedder child for these settings: the running one, or a new one if none is alive."""
        key = (spec, nice, threads)
        found = cls._shared.get(key)
        if found is None or not found._proc.is_alive():
            first = not cls._shared
            found = cls._shared[key] = cls(spec, nice, threads)
            if first:  # registered after multiprocessing's own exit handler, so it runs before that one kills the
                import atexit  # daemonic child (killed there, its semaphore leaked, with a warning at every exit)

                atexit.register(cls.stop_shared)
        return found

    @classmethod
    def stop_shared(cls) -> None:
        for proc in cls._shared.values():
            proc.stop()
        cls._shared.clear()

    def _receive(self) -> Any:
        try:
            kind, value = self._conn.recv()
        except (EOFError, OSError):
            raise RuntimeError(f"embedder process ended (exit code {self._proc.exitcode})") from None
        if kind == "error":
            raise RuntimeError(value)
        return value

    def wait_ready(self) -> None:
        with self._lock:  # the first caller reads the child's "ready"; later ones find it read
            if not self._ready:
                self._receive()
                self._ready = True

    def encode(self, texts: list[str], grouped: bool = False) -> np.ndarray:
        """Embeddings of `texts`; `grouped`: several samples' texts at once (GROUP_BATCH on a CPU)."""
        with self._lock:
            self._conn.send((texts, grouped))
            return self._receive()

    def stop(self) -> None:
        self._conn.close()  # an idle child reads end-of-file and leaves at once (`_serve`)
        self._proc.join(0.5 if self._ready else 0.05)
        if self._proc.is_alive():  # still loading or encoding: nothing waits for that any more
            self._proc.kill()
            self._proc.join(5)


def _serve(spec: str, conn: Any, nice: int = 0, threads: int | None = None) -> None:
    """The child's loop: load the model, say so, then encode each list of texts received until the pipe closes."""
    import os
    import sys

    if nice:
        os.nice(nice)

    os.dup2(2, 1)  # anything the libraries print goes to standard error
    sys.stdout = sys.stderr
    from emocaustics.models.embedders import make_embedder

    try:
        if threads is not None:
            import torch

            torch.set_num_threads(threads)
        emb = make_embedder(spec)
        model = emb._load()  # type: ignore[attr-defined]
        on_cpu = model.device.type == "cpu"
        default_batch = emb.batch_size  # type: ignore[attr-defined]
        conn.send(("ready", None))
    except Exception as exc:
        conn.send(("error", f"{type(exc).__name__}: {exc}"))
        return
    while True:
        try:
            texts, grouped = conn.recv()
        except (EOFError, OSError):
            # Nothing is left to do: leave without the interpreter's teardown of torch and transformers, which took
            # 0.5 s that every run's exit waited for (the parent joins this child before it exits). Only
            # multiprocessing's own exit step runs first: it releases the semaphores made here (tqdm's lock),
            # which the resource tracker would otherwise report as leaked.
            from multiprocessing import util

            util._exit_function()
            sys.stderr.flush()
            os._exit(0)
        if on_cpu:
            emb.batch_size = GROUP_BATCH if grouped else CPU_SIDE_TEXT_BATCH  # type: ignore[attr-defined]
        else:
            emb.batch_size = default_batch  # type: ignore[attr-defined]
        try:
            conn.send(("ok", emb.encode(texts)))  # type: ignore[attr-defined]
        except Exception as exc:
            conn.send(("error", f"{type(exc).__name__}: {exc}"))


def in_daemon_thread(fn: Callable[..., Any], *args: Any) -> asyncio.Future[Any]:
    """`fn(*args)` in a daemon thread. Not `asyncio.to_thread`: `asyncio.run` and the interpreter's exit wait for
    the default executor's threads, so a run whose samples never needed embeddings would still wait for the
    model to finish loading before it could end."""
    # `wrap_future` hands the thread's result to the loop (dropped once the loop has closed); marked running, the
    # future is not cancelled with a waiter, so the thread never settles a cancelled one.
    done: concurrent.futures.Future[Any] = concurrent.futures.Future()
    done.set_running_or_notify_cancel()

    def target() -> None:
        try:
            done.set_result(fn(*args))
        except BaseException as e:  # handed to the awaiting coroutine
            done.set_exception(e)

    fut = asyncio.wrap_future(done)
    threading.Thread(target=target, name="embed-feed", daemon=True).start()
    return fut
