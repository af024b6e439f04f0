"""`PerLoop` (models/base.py): one object per event loop, made on that loop's first use, forgotten by `drop`."""

import asyncio

from emocaustics.models.base import PerLoop


def test_one_object_per_event_loop_made_on_first_use():
    made = []

    def make():
        made.append(object())
        return made[-1]

    per_loop = PerLoop(make)

    async def twice():
        return per_loop.here(), per_loop.here()

    a1, a2 = asyncio.run(twice())
    b1, _ = asyncio.run(twice())
    assert a1 is a2 and b1 is not a1 and len(made) == 2

    async def dropped():
        here = per_loop.here()
        return here, per_loop.drop(), per_loop.drop(), per_loop.here()

    here, gone, again, fresh = asyncio.run(dropped())
    assert gone is here and again is None and fresh is not here and len(made) == 4
