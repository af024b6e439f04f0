"""How many threads the BLAS library may use inside the resampling loops (one matrix product per chunk).

Default 1: score tables are computed beside engines, Ray workers and other jobs that already hold the cores, and a
multi-threaded OpenBLAS product under contention spins: on the shared 2-core machine at load average ~12 the bootstrap
of 20 configurations x 10,000 items x 10,000 resamples took 12-22 s with OpenBLAS's default threads and 1.7-3.4 s with
one thread (benchmarks/stats_bench.py). `EMOCAUSTICS_STATS_THREADS=N` allows N (e.g. on an idle many-core node).
Needs threadpoolctl (installed with scikit-learn, which sentence-transformers requires); without it nothing is limited.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

ENV = "EMOCAUSTICS_STATS_THREADS"


def stats_threads() -> int:
    raw = os.environ.get(ENV, "1")
    try:
        n = int(raw)
    except ValueError:
        raise ValueError(f"{ENV}={raw!r}: expected a whole number of threads (>= 1)") from None
    if n < 1:
        raise ValueError(f"{ENV}={raw!r}: expected a whole number of threads (>= 1)")
    return n


@contextmanager
def blas_threads(n: int | None = None) -> Iterator[None]:
    """Limit the BLAS thread pools to `n` (default `stats_threads()`) for the duration of the block."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # not installed: the products run with the library's own default
        yield
        return
    with threadpool_limits(limits=n or stats_threads(), user_api="blas"):
        yield
