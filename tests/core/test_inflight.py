"""The solving plans' scheduler (core/inflight.py): items start in order, never more than the bound in flight."""

from __future__ import annotations

import asyncio

import pytest

from emocaustics.core.inflight import Admission, Slot, run_in_flight


def _run(items, *, limit, weight=lambda _: 1.0, budget=None, hold=0.01, release_early=False):
    """Each item sleeps `hold` s; returns results, the start order, the admission (its peaks) and the most tasks alive."""
    started: list[int] = []
    admission = Admission(limit, budget)
    most = [0]

    async def fn(item: int, slot: Slot) -> int:
        started.append(item)
        most[0] = max(most[0], len(asyncio.all_tasks()) - 1)  # minus the feeder's own task
        await asyncio.sleep(hold)
        if release_early:
            await slot.release()
            await slot.release()  # twice: a no-op
        return item * 10

    results = asyncio.run(run_in_flight(items, fn, limit=limit, weight=weight, budget=budget, admission=admission))
    return results, started, admission, most[0]


def test_results_come_back_in_the_items_order_and_items_start_in_order() -> None:
    results, started, adm, _ = _run([3, 1, 2, 5, 4], limit=2)
    assert results == [30, 10, 20, 50, 40]
    assert started == [3, 1, 2, 5, 4]
    assert adm.peak_held == 2 and adm.held == 0 and adm.weight == 0


def test_no_more_tasks_alive_than_the_limit() -> None:
    """A task per item made up front held 1,000 tasks here; the bound holds 4 (the feeder makes the next when one ends)."""
    _, _, adm, most = _run(list(range(1000)), limit=4, hold=0.0)
    assert adm.peak_held == 4 and most <= 4


def test_a_weight_budget_bounds_the_weight_in_flight() -> None:
    """Weights 6, 5, 4, 3, 2, 1 under budget 10 and limit 5: 6 alone (+5 = 11 > 10), then 5+4 = 9, 3+2+1 = 6;
    the peak is 9 (6 then 5 could not share; the head waits, nothing overtakes it)."""
    items = [6, 5, 4, 3, 2, 1]
    results, started, adm, _ = _run(items, limit=5, weight=float, budget=10)
    assert started == items
    assert adm.peak_weight <= 10 and adm.peak_weight == 9
    assert results == [60, 50, 40, 30, 20, 10]


def test_an_item_heavier_than_the_budget_runs_alone() -> None:
    """25 starts alone (nothing held); the 1s wait for it (25 + 1 > 10), then run together: held at most 2."""
    _, started, adm, _ = _run([25, 1, 1], limit=3, weight=float, budget=10)
    assert started == [25, 1, 1] and adm.peak_weight == 25 and adm.peak_held == 2


def test_a_slot_released_early_lets_the_next_start_before_the_first_returns() -> None:
    """`fn` releases after its bounded part; a released slot counts once even if released again."""
    _, _, adm, _ = _run(list(range(6)), limit=1, release_early=True)
    assert adm.held == 0 and adm.peak_held == 1


def test_the_first_exception_stops_the_starts_and_is_raised() -> None:
    started: list[int] = []

    async def fn(item: int, slot: Slot) -> int:
        started.append(item)
        await asyncio.sleep(0.001)
        if item == 2:
            raise ValueError("item 2 broke")
        await asyncio.sleep(0.05)
        return item

    with pytest.raises(ValueError, match="item 2 broke"):
        asyncio.run(run_in_flight(range(100), fn, limit=2))
    assert 2 in started and len(started) < 10


def test_limit_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        Admission(0)
