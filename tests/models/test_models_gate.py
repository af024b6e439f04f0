"""The priority gate in front of a remote endpoint (models/gate.py): at most `limit` calls hold a slot; waiting calls
are let in lowest priority first (the longest dependent chain), ties in arrival order; a cancelled waiter never
takes a slot."""

from __future__ import annotations

import asyncio

from emocaustics.models.gate import PriorityGate


def test_waiters_enter_by_priority_then_arrival_and_the_limit_holds() -> None:
    async def go() -> tuple[list[str], int]:
        gate = PriorityGate(2)
        order: list[str] = []
        inside = peak = 0

        async def call(name: str, priority: int, hold: float) -> None:
            nonlocal inside, peak
            async with gate.slot(priority):
                inside += 1
                peak = max(peak, inside)
                order.append(name)
                await asyncio.sleep(hold)
                inside -= 1

        first = [asyncio.ensure_future(call(n, 0, 0.05)) for n in ("a", "b")]
        await asyncio.sleep(0)  # a and b hold both slots
        later = [asyncio.ensure_future(call(n, p, 0.01)) for n, p in
                 (("late-0", 0), ("chain-5", -5), ("late-0b", 0), ("chain-9", -9))]
        await asyncio.gather(*first, *later)
        return order, peak

    order, peak = asyncio.run(go())
    assert order == ["a", "b", "chain-9", "chain-5", "late-0", "late-0b"]
    assert peak == 2


def test_a_cancelled_waiter_gives_its_turn_away() -> None:
    async def go() -> list[str]:
        gate = PriorityGate(1)
        entered: list[str] = []

        async def call(name: str, priority: int) -> None:
            async with gate.slot(priority):
                entered.append(name)
                await asyncio.sleep(0.02)

        holder = asyncio.ensure_future(call("holder", 0))
        await asyncio.sleep(0)
        doomed = asyncio.ensure_future(call("doomed", -10))
        patient = asyncio.ensure_future(call("patient", 0))
        await asyncio.sleep(0.005)
        doomed.cancel()
        await asyncio.gather(holder, patient)
        assert doomed.cancelled()
        # the slot is free again: a new call enters at once
        await asyncio.wait_for(call("after", 0), 1)
        return entered

    assert asyncio.run(go()) == ["holder", "patient", "after"]
