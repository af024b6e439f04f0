"""Critical-path-aware placement (models/placement.py): worked examples, no engine and no Ray."""

from __future__ import annotations

import asyncio

import pytest

from emocaustics.models.placement import Placement


def test_a_replica_holding_a_chain_counts_the_chains_duration_beyond_its_work():
    p = Placement(3, chain_cost=10)
    p.hold(0, 20, chain=5)  # 5 calls x 10 = 50 units of time, 20 of them its own work: extra 30
    p.hold(1, 40, chain=1)  # no chain: work only
    assert [p.load(i) for i in range(3)] == [50, 40, 0]
    assert p.pick(None) == 2
    p.hold(2, 45)
    assert p.pick(None) == 1  # 40 < 45 < 50: the chain's replica is the fullest although it holds the least work


def test_only_the_longest_chain_of_a_replica_adds_time_and_its_end_hands_over_to_the_next_longest():
    p = Placement(1, chain_cost=10)
    long_ = p.hold(0, 10, chain=8)  # extra 70
    short = p.hold(0, 10, chain=4)  # extra 30: runs beside the long one, adds only its work
    assert p.load(0) == 20 + 70
    p.release(0, 10, long_)
    assert p.load(0) == 10 + 30
    p.release(0, 10, short)
    assert (p.load(0), p.work[0]) == (0, 0)


def test_a_chain_whose_work_outweighs_its_duration_counts_its_work():
    p = Placement(1, chain_cost=10)
    p.hold(0, 100, chain=3)  # 3 x 10 = 30 < 100
    assert p.load(0) == 100


def test_runs_arriving_together_are_placed_longest_chain_first():
    async def main() -> dict[str, int]:
        p = Placement(2, chain_cost=10)
        # arrival order b, c, d; placed c (9 calls), b (3), d (2)
        runs = {"b": (10, 3), "c": (10, 9), "d": (30, 2)}
        placed = await asyncio.gather(*(p.place(key, w, chain) for key, (w, chain) in runs.items()))
        assert [p.load(0), p.load(1)] == [90, 60]  # c: 10 + 80; b: 10 + 20, then d: 30 (its extra is 0)
        return {key: i for key, (i, _) in zip(runs, placed)}

    # in arrival order b would have taken replica 0 and c replica 1; c goes first and takes replica 0, then b and d
    # go to replica 1, the less loaded (30 < 90, then 30 + 30 = 60 < 90)
    assert asyncio.run(main()) == {"c": 0, "b": 1, "d": 1}


def test_a_request_without_a_chain_and_a_retry_are_placed_at_once_by_load():
    async def main() -> None:
        p = Placement(2, chain_cost=10)
        p.hold(0, 5)
        i, _ = await p.place(None, 1)  # chain 0: no gathering
        assert i == 1
        j, _ = await p.place("x", 4, chain=6, avoid={1})  # a retry avoids the replica that died
        assert j == 0 and p.affinity["x"] == 0 and p.load(0) == 5 + 4 + (60 - 4)

    asyncio.run(main())


def test_an_affinity_key_keeps_its_replica_unless_avoided():
    p = Placement(2, chain_cost=10)
    p.hold(0, 1)
    assert p.pick("d1") == 1
    p.hold(1, 50)
    assert p.pick("d1") == 1  # sticks although replica 1 is now the busier
    assert p.pick("d1", avoid={1}) == 0


def test_a_run_cancelled_while_gathered_or_just_placed_holds_no_load():
    async def main() -> None:
        p = Placement(2, chain_cost=10)
        waiting = asyncio.ensure_future(p.place("a", 10, chain=5))
        other = asyncio.ensure_future(p.place("b", 10, chain=4))
        await asyncio.sleep(0)
        waiting.cancel()  # cancelled before the batch is placed: skipped
        i, _ = await other
        with pytest.raises(asyncio.CancelledError):
            await waiting
        assert (i, p.work, p.load(i)) == (0, [10, 0], 40)
        # placed, then cancelled before its caller resumed: the load is given back
        late = asyncio.ensure_future(p.place("c", 7, chain=3))
        while not p._pending:
            await asyncio.sleep(0)
        while p._pending:
            await asyncio.sleep(0)
        late.cancel()
        with pytest.raises(asyncio.CancelledError):
            await late
        assert p.work == [10, 0] and p.load(1) == 0

    asyncio.run(main())


def test_runs_that_answer_side_by_side_wait_for_the_long_chains_arriving_with_them():
    async def main() -> dict[str, int]:
        p = Placement(2, chain_cost=10)
        runs = {"direct": (50, 1), "window": (10, 6)}  # arrival order: the direct run first
        placed = await asyncio.gather(*(p.place(key, w, chain) for key, (w, chain) in runs.items()))
        assert [p.load(0), p.load(1)] == [60, 50]  # window: 10 + (60 - 10); direct: 50 (1 x 10 < 50: no extra)
        return {key: i for key, (i, _) in zip(runs, placed)}

    assert asyncio.run(main()) == {"window": 0, "direct": 1}
