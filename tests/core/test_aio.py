"""The driver's event-loop runner: collector settings for many calls in flight, restored afterwards."""

import asyncio
import gc

from emocaustics.core import aio


def test_many_calls_sets_and_restores_the_collector() -> None:
    before = gc.get_threshold()
    frozen_before = gc.get_freeze_count()
    with aio.many_calls():
        assert gc.get_threshold() == aio.GC_THRESHOLDS
        if frozen_before == 0:
            assert gc.get_freeze_count() > 0  # what was alive at the start is no longer walked
        with aio.many_calls():  # nested (a second runner in the same process): settings stay until the last leaves
            assert gc.get_threshold() == aio.GC_THRESHOLDS
        assert gc.get_threshold() == aio.GC_THRESHOLDS
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == frozen_before


def test_run_uses_many_calls_and_restores_on_error() -> None:
    before = gc.get_threshold()
    seen: list[tuple[int, int, int]] = []

    async def work() -> int:
        seen.append(gc.get_threshold())
        await asyncio.sleep(0)
        return 7

    async def fails() -> None:
        raise ValueError("boom")

    assert aio.run(work()) == 7
    assert seen == [aio.GC_THRESHOLDS]
    try:
        aio.run(fails())
    except ValueError:
        pass
    else:  # pragma: no cover - the coroutine raises
        raise AssertionError("the error must reach the caller")
    assert gc.get_threshold() == before


def test_cycles_are_still_collected_under_many_calls() -> None:
    import weakref

    class Node:
        pass

    with aio.many_calls():
        a, b = Node(), Node()
        a.other, b.other = b, a  # type: ignore[attr-defined]
        ref = weakref.ref(a)
        del a, b
        gc.collect(0)  # a young collection frees a young cycle
        assert ref() is None
