"""A child process that does a writer's work off the driver's GIL (the eval log's: `writer.EvalLog`).

The driver's event loop only pickles each message (a finished sample's raw calls: lists, dicts, strings) and queues
it; a sender thread writes the bytes to the pipe (the write releases the GIL) and a receiver thread settles each
message's future with the child's answer, in order. Nobody on the driver's path waits for an answer (the child may
fall far behind on a busy machine): a message that failed fails the next one handed over at once, so the run stops
there; only a child `BEHIND` messages behind holds the sender (the memory bound). The child runs at the driver's
priority: a config's finish waits for it (the report reads the log), and at niceness +10 it was starved there.
The child ends when the parent stops it, when the pipe closes (the parent detached or died: its backlog written
first), or when it is killed; a child that dies fails every message still waiting with a named error
(`EvalLogError`), so nothing waits for it forever.
A fresh interpreter (`python -m emocaustics.evallog.process`, like the vLLM reaper, `models.reaper`), not a fork (a
driver holding threads, Ray or an event loop) and not multiprocessing's spawn: that imports the parent's main script
again in the child, which fails for a script without a `__name__ == "__main__"` guard (a notebook's or a user's script
calling `emocaustics.api`). The child's end of a socket pair is its only link: the parent's death reads as end-of-file
there.
"""

from __future__ import annotations

import os
import pickle
import queue
import socket
import subprocess
import sys
import threading
import traceback
from collections import deque
from collections.abc import Callable
from contextlib import suppress
from concurrent.futures import Future, wait as wait_for
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from emocaustics.core.errors import WriteFailed

BEHIND = 2000  # messages sent and not answered before `submit` waits for the oldest (a few KB to a MB each)
STOP_WAIT_S = 120.0  # a stop waits this long for the child's backlog (its lines) before the child is killed


class EvalLogError(RuntimeError):
    """The eval log could not write (its writer process failed or died); the message names the run and config."""


class ChildWriter:
    """The parent's side: `submit(message, what)` -> a future of the child's answer; `stop()` -> the child's last
    answer (its state), the child gone. `where` and `what` name the run and the config in every error."""

    def __init__(self, factory: Callable[[Any], Callable[[tuple], Any]], state: Any, where: str) -> None:
        self.where = where
        mine, child = socket.socketpair()
        env = dict(os.environ)  # the package importable in the child as it is here (a checkout on sys.path too)
        env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).resolve().parents[2]),
                                             *filter(None, [env.get("PYTHONPATH")])])
        try:
            self._proc = subprocess.Popen([sys.executable, "-m", __name__, str(child.fileno())],
                                          pass_fds=[child.fileno()], stdin=subprocess.DEVNULL, stdout=2, env=env)
        except Exception as exc:
            raise EvalLogError(f"{where}: the writer process did not start: {type(exc).__name__}: {exc}") from exc
        finally:
            child.close()  # the parent keeps no copy of the child's end: the child's death reads as end-of-file
        self._conn = Connection(mine.detach())
        self.pid = self._proc.pid
        self._lock = threading.Lock()
        self._waiting: deque[tuple[Future[Any], str]] = deque()  # in the order sent: the child answers in order
        self._out: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self._error: EvalLogError | None = None
        self._failed: BaseException | None = None  # an answer that failed: handed to the next message (`submit`)
        self._stopped = False
        self._sender = threading.Thread(target=self._send_loop, name="evallog-send", daemon=True)
        self._sender.start()
        threading.Thread(target=self._receive_loop, name="evallog-receive", daemon=True).start()
        self.submit(("start", factory, state), "its start")

    def submit(self, message: tuple, what: str) -> "Future[Any]":
        """The message's future. Raises at once (the message not sent) when the child died or was stopped, or an
        earlier message failed (that one's error, once), so that a caller that waits for no answer learns it here."""
        with self._lock:  # far behind: the memory bound holds the caller until the oldest is answered (or fails)
            oldest = [self._waiting[0][0]] if len(self._waiting) >= BEHIND else []
        wait_for(oldest)
        fut: Future[Any] = Future()
        try:
            data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:
            raise EvalLogError(f"{self.where}: {what} cannot be handed to the writer process: "
                               f"{type(exc).__name__}: {exc}") from exc
        with self._lock:
            if self._error is not None or self._stopped:
                raise EvalLogError(f"{self._error or self.where + ': the writer process was stopped'}, before {what} "
                                   "was written")
            self._stopped = message == ("stop",)  # later messages fail: the child ends after the stop's answer
            if self._failed is not None and not self._stopped:  # a stop still lets the child end its backlog
                failed, self._failed = self._failed, None
                raise failed
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
            except (EOFError, OSError):  # the child ended (after a stop, its backlog, or not) or broke its end
                self._died()
                self._conn.close()
                return
            with self._lock:
                fut, what = self._waiting.popleft()
                failed = (None if kind == "ok"  # a write of the child that failed: its one line, naming the path
                          else WriteFailed(*value) if kind == "write"
                          else EvalLogError(f"{self.where}: writing {what} failed in the writer process "
                                            f"(pid {self.pid}):\n{value}"))
                self._failed = self._failed if what == "stop" else self._failed or failed
            # a future its waiter cancelled takes no answer; an answer set on it raised InvalidStateError here, and
            # this thread died with every later answer unsent
            if fut.set_running_or_notify_cancel():
                fut.set_result(value) if failed is None else fut.set_exception(failed)

    def _died(self) -> None:
        """The child reaped (killed if it has not ended in 2 s); every message still waiting fails, naming what it was;
        later ones fail at once."""
        try:
            code = self._proc.wait(2)
        except subprocess.TimeoutExpired:  # its end of the pipe broke, the process not gone: ended now
            self._proc.kill()
            code = self._proc.wait()
        with self._lock:
            if self._error is None:
                self._error = EvalLogError(f"{self.where}: the writer process (pid {self.pid}) ended with exit "
                                           f"code {code}")
            waiting, self._waiting = list(self._waiting), deque()
            self._out.put(None)
        for fut, what in waiting:
            if not fut.done():
                fut.set_exception(EvalLogError(f"{self._error}, before {what} was written"))

    def stop(self, wait: float = STOP_WAIT_S) -> Any:
        """Stop the child once it has answered what was sent before; its answer to the stop (None if it failed or
        died). The child is gone when this returns (killed after `wait` seconds)."""
        try:
            state = self.submit(("stop",), "stop").result(wait)
        except Exception:  # died, failed or too slow: nothing to hand back
            state = None
        self._out.put(None)
        if state is None:  # it failed or is stuck: ended now
            self._proc.kill()
        return state  # the child exits by itself after its answer, reaped by the receiver (`_died`), not waited for

    def detach(self) -> None:
        """Go without waiting for the child's work (a process's exit, a log dropped unclosed): what was handed over
        goes into the pipe, whose writing end then closes; the child writes its backlog on its own and ends."""
        self._stopped = True  # later messages fail (`submit`)
        self._out.put(None)
        self._sender.join()
        with suppress(OSError), socket.socket(fileno=os.dup(self._conn.fileno())) as end:  # (closed: the child died)
            end.shutdown(socket.SHUT_WR)  # the child reads end-of-file after the last message


def _serve(conn: Connection) -> None:
    """The child: build the handler from the first message (a factory, pickled by name, and the log's state), then
    answer each message in order until "stop" or the pipe's end. A Ctrl-C to the job does not end it: the parent
    stops it once the lines sent are written."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    handler: Callable[[tuple], Any] | None = None
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):  # the parent is gone or detached: everything it sent is written
            return
        try:
            if message[0] == "start":
                handler, reply = message[1](message[2]), ("ok", None)
            else:
                assert handler is not None, "no start message"
                reply = ("ok", handler(message))
        except WriteFailed as exc:
            reply = ("write", (exc.what, exc.when))
        except Exception:
            reply = ("error", traceback.format_exc(limit=8))
        with suppress(OSError):  # the parent went without waiting (`ChildWriter.detach`): the backlog is still written
            conn.send(reply)
        if message[0] == "stop":
            return


if __name__ == "__main__":
    _serve(Connection(int(sys.argv[1])))
