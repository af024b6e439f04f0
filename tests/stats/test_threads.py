"""The BLAS thread limit of the resampling loops: same results whatever the limit, and a named error for bad input."""

from __future__ import annotations

import numpy as np
import pytest

from emocaustics.stats import bootstrap_means
from emocaustics.stats.threads import ENV, blas_threads, stats_threads


def test_results_do_not_depend_on_the_thread_limit(monkeypatch):
    values = np.random.default_rng(0).random((5, 3000))
    monkeypatch.setenv(ENV, "1")
    one = bootstrap_means(values, n_resamples=400, seed=3)
    monkeypatch.setenv(ENV, "2")
    two = bootstrap_means(values, n_resamples=400, seed=3)
    np.testing.assert_allclose(one, two, rtol=0, atol=1e-12)


def test_the_limit_applies_inside_the_block(monkeypatch):
    threadpoolctl = pytest.importorskip("threadpoolctl")
    monkeypatch.setenv(ENV, "1")
    with blas_threads():
        blas = [p for p in threadpoolctl.threadpool_info() if p["user_api"] == "blas"]
        assert blas and all(p["num_threads"] == 1 for p in blas)


@pytest.mark.parametrize("raw", ["0", "two", "-1"])
def test_a_bad_setting_is_a_named_error(monkeypatch, raw):
    monkeypatch.setenv(ENV, raw)
    with pytest.raises(ValueError, match=ENV):
        stats_threads()


def test_the_setting_is_read_whole_and_the_message_is_exact(monkeypatch):
    monkeypatch.delenv(ENV, raising=False)
    assert stats_threads() == 1  # unset: one thread
    monkeypatch.setenv(ENV, "1")
    assert stats_threads() == 1
    monkeypatch.setenv(ENV, "3")
    assert stats_threads() == 3
    for raw in ("0", "x"):
        monkeypatch.setenv(ENV, raw)
        with pytest.raises(ValueError) as err:
            stats_threads()
        assert str(err.value) == f"EMOCAUSTICS_STATS_THREADS={raw!r}: expected a whole number of threads (>= 1)"


def test_an_explicit_limit_wins_over_the_setting(monkeypatch):
    threadpoolctl = pytest.importorskip("threadpoolctl")
    monkeypatch.setenv(ENV, "1")
    with blas_threads(2):
        blas = [p for p in threadpoolctl.threadpool_info() if p["user_api"] == "blas"]
        assert blas and all(p["num_threads"] == 2 for p in blas)


def test_without_threadpoolctl_the_block_runs_unlimited(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "threadpoolctl", None)  # `from threadpoolctl import ...` raises ImportError
    ran = []
    with blas_threads(1):
        ran.append(True)
    assert ran == [True]
    values = np.arange(12.0).reshape(2, 6)
    np.testing.assert_allclose(bootstrap_means(values, n_resamples=5, seed=1)[1] - 6.0,
                               bootstrap_means(values, n_resamples=5, seed=1)[0], atol=1e-12)
