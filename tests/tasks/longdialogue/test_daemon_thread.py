"""`embedprocess.in_daemon_thread`: the embedder's waits run in a daemon thread, whose result reaches the loop."""

import asyncio
import threading
import time

import pytest

from emocaustics.tasks.longdialogue.embedprocess import in_daemon_thread


def test_result_and_error_reach_the_awaiting_coroutine():
    async def main():
        assert await in_daemon_thread(lambda a, b: a + b, 2, 3) == 5
        with pytest.raises(ZeroDivisionError):
            await in_daemon_thread(lambda: 1 / 0)

    asyncio.run(main())


def test_a_cancelled_waiter_or_a_closed_loop_leaves_the_thread_quiet():
    """The feed's close cancels a wait on a model still loading, and the run's loop may be gone before the load
    ends: the thread must finish without an error of its own (a daemon thread's error prints at exit)."""
    errors = []
    hook, threading.excepthook = threading.excepthook, lambda args: errors.append(args.exc_value)
    release = threading.Event()
    try:
        async def main():
            slow = in_daemon_thread(release.wait, 5)
            other = in_daemon_thread(release.wait, 5)
            await asyncio.sleep(0.01)
            slow.cancel()
            with pytest.raises(asyncio.CancelledError):
                await slow
            return other  # never awaited: its loop closes first

        asyncio.run(main())
        release.set()
        time.sleep(0.1)
        done = [t for t in threading.enumerate() if t.name == "embed-feed"]
        for t in done:
            t.join(1)
    finally:
        threading.excepthook = hook
    assert errors == []
