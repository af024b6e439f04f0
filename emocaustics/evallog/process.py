"""A child process that does a writer's work off the driver's GIL (the eval log's: `writer.EvalLog`).

The driver's event loop only pickles each message (a finished sample's raw calls: lists, dicts, strings) and queues
it; a sender thread writes the bytes to the pipe (the write releases the GIL) and a receiver thread settles each
message's future with the child's answer, in order. The child ends when the parent stops it, when the pipe closes
(the parent died), or when it is killed; a child that dies fails every message still waiting with a named error
(`EvalLogError`), so nothing waits for it forever. Started with the spawn context, like the embedder's process
(`extract.embedfeed.EmbedderProcess`): a fork of a driver holding threads, Ray or an event loop is not safe.
"""

from __future__ import annotations

import pickle
import queue
import threading
import traceback
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

STOP_WAIT_S = 120.0  # a stop waits this long for the child's backlog (its lines) before the child is killed


class EvalLogError(RuntimeError):
    """The eval log could not write (its writer process failed or died); the message names the run and config."""


class ChildWriter:
    """The parent's side: `submit(message, what)` -> a future of the child's answer; `stop()` -> the child's last
    answer (its state), the child gone. `where` and `what` name the run and the config in every error."""

    def __init__(self, factory: Callable[[Any], Callable[[tuple], Any]], state: Any, where: str) -> None:
        import multiprocessing as mp

        self.where = where
        ctx = mp.get_context("spawn")
        self._conn, child = ctx.Pipe()
        self._proc = ctx.Process(target=_serve, args=(child, factory), daemon=True, name="emocaustics-evallog")
        try:
            self._proc.start()
        except Exception as exc:
            raise EvalLogError(f"{where}: the writer process did not start: {type(exc).__name__}: {exc}") from exc
        finally:
            child.close()  # the parent keeps no copy of the child's end: the child's death reads as end-of-file
        self.pid = self._proc.pid
        self._lock = threading.Lock()
        self._waiting: deque[tuple[Future[Any], str]] = deque()  # in the order sent: the child answers in order
        self._out: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self._error: EvalLogError | None = None
        self._stopped = False
        threading.Thread(target=self._send_loop, name="evallog-send", daemon=True).start()
        threading.Thread(target=self._receive_loop, name="evallog-receive", daemon=True).start()
        self.submit(("start", state), "its start")

    def submit(self, message: tuple, what: str) -> "Future[Any]":
        fut: Future[Any] = Future()
        try:
            data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:
            fut.set_exception(EvalLogError(f"{self.where}: {what} cannot be handed to the writer process: "
                                           f"{type(exc).__name__}: {exc}"))
            return fut
        with self._lock:
            if self._error is not None or self._stopped:
                fut.set_exception(EvalLogError(f"{self._error or self.where + ': the writer process was stopped'}"
                                               f", before {what} was written"))
                return fut
            self._waiting.append((fut, what))
            self._out.put(data)
        return fut

    def _send_loop(self) -> None:
        while (data := self._out.get()) is not None:
            try:
                self._conn.send_bytes(data)
            except (OSError, ValueError):  # the child is gone: the receiver names it
                self._died()
                return

    def _receive_loop(self) -> None:
        while True:
            try:
                kind, value = self._conn.recv()
            except (EOFError, OSError):
                self._died()
                return
            with self._lock:
                fut, what = self._waiting.popleft()
            if kind == "ok":
                fut.set_result(value)
            else:
                fut.set_exception(EvalLogError(f"{self.where}: writing {what} failed in the writer process "
                                               f"(pid {self.pid}):\n{value}"))
            if what == "stop":
                return

    def _died(self) -> None:
        """Every message still waiting fails, naming what it was; later ones fail at once."""
        self._proc.join(2)
        with self._lock:
            if self._error is None:
                self._error = EvalLogError(f"{self.where}: the writer process (pid {self.pid}) ended with exit "
                                           f"code {self._proc.exitcode}")
            waiting, self._waiting = list(self._waiting), deque()
            self._out.put(None)
        for fut, what in waiting:
            if not fut.done():
                fut.set_exception(EvalLogError(f"{self._error}, before {what} was written"))

    def stop(self, wait: float = STOP_WAIT_S) -> Any:
        """Stop the child once it has answered what was sent before; its answer to the stop (None if it failed or
        died). The child is gone when this returns (killed after `wait` seconds)."""
        fut = self.submit(("stop",), "stop")
        with self._lock:
            self._stopped = True
        try:
            state = fut.result(wait)
        except Exception:  # died, failed or too slow: nothing to hand back
            state = None
        self._out.put(None)
        self._proc.join(5)
        if self._proc.is_alive():
            self._proc.kill()
            self._proc.join(5)
        self._conn.close()
        return state

    def alive(self) -> bool:
        return self._proc.is_alive()


def _serve(conn: Any, factory: Callable[[Any], Callable[[tuple], Any]]) -> None:
    """The child: build the handler from the first message, then answer each message in order until "stop" or the
    pipe's end. A Ctrl-C to the job does not end it: the parent stops it once the lines sent are written."""
    import os
    import signal
    import sys

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.dup2(2, 1)  # anything the libraries print goes to standard error
    sys.stdout = sys.stderr
    handler: Callable[[tuple], Any] | None = None
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):  # the parent is gone
            return
        try:
            if message[0] == "start":
                handler, reply = factory(message[1]), None
            else:
                assert handler is not None, "no start message"
                reply = handler(message)
            conn.send(("ok", reply))
        except Exception:
            conn.send(("error", traceback.format_exc(limit=8)))
        if message[0] == "stop":
            return
