"""Which replica of a model pool gets each call or dialogue-run: least-loaded placement that knows about chains.

Why this exists (issue 31). A dialogue's window run is a chain of dependent calls: each window waits for the answer
to the one before. The chain's length in calls, not its work, sets when it can finish, and each of its calls takes
longer the busier its replica is (every engine step it shares with other requests' prefill chunks is slower). The
pool used to balance work alone: the replica of the longest chain got as much other work as every replica, and at 64
simulated replicas the 400-dialogue grid took 1.5x the time of its longest chain alone (benchmarks/scale_bench.py).

The rule here:
1. A replica's load is the time it is expected to need, in work units (`weight`, e.g. runner.item_weight: answers of
   about one utterance): the work of everything it holds, plus, for the longest chain it holds, the chain's own
   duration beyond that chain's work: `chain x chain_cost - weight`. `chain` is the run's answers that wait for each
   other (runner.item_chain, same unit) and `chain_cost` the work a saturated replica completes while an idle one
   produces one unit of a chain. So the replica of a long chain looks full to least-loaded placement and gets only the
   work that the others cannot take before that chain ends, and the chain keeps a short per-call latency. Several
   chains share a replica cheaply (each adds only its work): a chain's calls are few at a time, run side by side.
2. Runs that arrive together (`place` gathers what arrives within a few turns of the event loop) are placed longest
   chain first, so the longest chains take the emptiest replicas before other runs fill them.
3. Within a replica the engine's priority (minus the calls that still follow in the chain; solve/ask.py) then serves
   the chain's calls before independent ones.
A request that gives no chain (`chain` 0: `generate`, or `run` without a chain_key) is placed at once, as before.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Collection

MAX_AFFINITY_KEYS = 100_000  # forget the oldest keys beyond this: a key only steers placement
# Work units per unit of chain. Calibrated on the simulated Qwen2.5-72B on 4x H100 (benchmarks/sim_engine.py) with the
# runner's units (item_weight, item_chain): the paper grid's 274,000 units of work take 64 saturated replicas ~246 s
# (~17 units per replica-second), and its longest chains take ~1.42 s per unit alone: 17 x 1.42 = ~25. (At 64 simulated
# replicas chain_cost 20 / 25 gave makespans of 502 / 501 s; issue 31.)
CHAIN_COST = 25.0
GATHER_TURNS = 3  # the gathering of a batch ends after this many event-loop turns bring no new run ...
GATHER_SECONDS = 0.05  # ... or after this long


class Placement:
    """Load per replica and the affinity map of one pool. `place` / `release` bracket every call on a replica."""

    def __init__(self, replicas: int, chain_cost: float = CHAIN_COST) -> None:
        self.work = [0] * replicas  # work units in flight per replica
        self.chain_cost = chain_cost
        self.affinity: dict[str, int] = {}
        self._extra = [0.0] * replicas  # the longest chain's duration beyond its work, per replica
        self._held: list[dict[int, float]] = [{} for _ in range(replicas)]  # token -> that run's extra
        self._tokens = itertools.count(1)
        self._pending: list[tuple[int, str | None, int, int, asyncio.Future]] = []  # (arrival, key, weight, chain, _)
        self._gathering: asyncio.Future | None = None

    def load(self, i: int) -> float:
        """Replica i's expected time to finish what it holds, in work units."""
        return self.work[i] + self._extra[i]

    def extra(self, weight: int, chain: int) -> float:
        """How much longer than its work a run whose chain is `chain` units long holds its replica."""
        return max(0.0, chain * self.chain_cost - weight)

    def pick(self, affinity: str | None, avoid: Collection[int] = frozenset()) -> int:
        """The affinity key's replica when it has one (and it is not avoided), else the least loaded; remembers it."""
        if affinity is not None:
            i = self.affinity.get(affinity)
            if i is not None and i not in avoid:
                return i
        n = len(self.work)
        candidates = [i for i in range(n) if i not in avoid] or list(range(n))
        i = min(candidates, key=self.load)
        if affinity is not None:
            if len(self.affinity) >= MAX_AFFINITY_KEYS:
                self.affinity.pop(next(iter(self.affinity)))
            self.affinity[affinity] = i
        return i

    def hold(self, i: int, weight: int, chain: int = 0) -> int:
        """Count a run on replica i; returns the token that `release` takes."""
        token = next(self._tokens)
        e = self.extra(weight, chain)
        self.work[i] += weight
        self._held[i][token] = e
        self._extra[i] = max(self._extra[i], e)
        return token

    def release(self, i: int, weight: int, token: int) -> None:
        self.work[i] -= weight
        e = self._held[i].pop(token, 0.0)
        if e and e >= self._extra[i]:  # the longest chain ended: the next longest still held sets the extra
            self._extra[i] = max(self._held[i].values(), default=0.0)

    async def place(self, affinity: str | None, weight: int, chain: int = 0,
                    avoid: Collection[int] = frozenset()) -> tuple[int, int]:
        """(replica, token) for a run. The first placement of a run with a chain (>= 1) waits until the runs arriving
        with it are known; then they are placed longest chain first, and runs that answer side by side (chain 1) in
        arrival order after them. Those wait too: placed at once, they would fill the replicas first."""
        if chain < 1 or avoid or (affinity is not None and affinity in self.affinity):
            i = self.pick(affinity, avoid)
            return i, self.hold(i, weight, chain)
        fut = asyncio.get_running_loop().create_future()
        self._pending.append((next(self._tokens), affinity, weight, chain, fut))
        if self._gathering is None:
            self._gathering = asyncio.ensure_future(self._place_gathered())
        try:
            return await fut
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():  # placed, then cancelled before it ran: give its load back
                i, token = fut.result()
                self.release(i, weight, token)
            raise

    async def _place_gathered(self) -> None:
        t0, quiet, seen = time.monotonic(), 0, 0
        while quiet < GATHER_TURNS and time.monotonic() - t0 < GATHER_SECONDS:
            await asyncio.sleep(0)
            quiet, seen = (0, len(self._pending)) if len(self._pending) != seen else (quiet + 1, seen)
        batch, self._pending, self._gathering = self._pending, [], None
        # Chains longest first; runs that answer side by side (chain 1) after them in arrival order, which mixes their
        # kinds on every replica so that errors in their weights average out (sorted by weight too, runs of one kind
        # went together: 528 s against 505 s at 64 simulated replicas; placing only the chains that alone outlast an
        # average replica's share first stacked the next longest on the same replicas: 539 s).
        batch.sort(key=lambda p: (-p[3], -p[2], p[0]) if p[3] > 1 else (-1, 0, p[0]))
        for _, affinity, weight, chain, fut in batch:
            if fut.cancelled():
                continue
            i = self.pick(affinity)
            fut.set_result((i, self.hold(i, weight, chain)))
