# Tests live next to what they test (tests/core, tests/tasks/<name>, tests/jobs ...) and are imported by path
# (pytest's importlib mode: two folders may both hold a test_data.py); shared helpers (extract_doubles, fakes/) are
# imported from this folder.
import sys as _sys
from pathlib import Path as _Path

_sys.path.insert(0, str(_Path(__file__).resolve().parent))

# ==== BEGIN models: engine fixtures (owner: model hosting, emocaustics/models) ====
# `ray_local`: Ray started once per test session on this machine (2 CPUs, 300 MB object store, no dashboard) and shut
#   down at the end, model pools first. Request it in any test that needs Ray.
# `smoke_pool`: the smoke model's ModelPool (one replica, the real vLLM CPU engine in a Ray actor), engine started
#   once per session. `get_pool("smoke")` and `make_llm("smoke")` return this very pool, so code under test that makes
#   its own LLM from the spec "smoke" shares the engine. `smoke_pool.start_seconds` is how long the start took.
#   Its `stats()["engine_starts"]` counts every engine start of the session (1 unless a test killed the replica;
#   the kill test uses a pool of its own). Compare counters before/after your test rather than absolute values.
# `victim_pool`: that pool of its own, for the tests that kill a replica or its engine (tests/models/test_models_faults,
#   tests/reliability/test_reliability_actor_kill): started once per session (an engine start is about 30 s on 2 busy
#   cores), restarted by Ray after each kill and shut down after the last test that uses it; a job whose model spec
#   is `VICTIM_SPEC` runs on it. Each test compares the pool's counters before and after its kill.
import asyncio as _models_asyncio
import os as _models_os

import pytest as _models_pytest

_models_os.environ.setdefault("HF_HUB_OFFLINE", "1")
_models_os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
_models_os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@_models_pytest.fixture(scope="session")
def ray_local():
    import ray

    if ray.is_initialized():  # someone started it already in this session: share it, do not stop it
        yield ray
        return
    from emocaustics.core.cluster import connect

    connect(num_cpus=2, object_store_memory=300_000_000)
    try:
        yield ray
    finally:
        from emocaustics.models.pool import shutdown_pools

        shutdown_pools()
        ray.shutdown()


@_models_pytest.fixture(scope="session")
def smoke_pool(ray_local):
    from emocaustics.models.pool import get_pool
    from emocaustics.models.spec import parse_llm_spec

    pool = get_pool(parse_llm_spec("smoke"))
    pool.start_seconds = _models_asyncio.run(pool.start())
    return pool


VICTIM_SPEC = "smoke?max_num_seqs=32&kv_cache_memory_bytes=268435456"  # small KV cache, not the smoke_pool's spec


@_models_pytest.fixture(scope="session")
def victim_pool(ray_local):
    from emocaustics.models.pool import get_pool
    from emocaustics.models.spec import parse_llm_spec

    pool = get_pool(parse_llm_spec(VICTIM_SPEC))
    try:
        _models_asyncio.run(pool.start())
        yield pool
    finally:
        pool.shutdown()  # a second shutdown (after its last test, below) finds its replica gone and does nothing


@_models_pytest.hookimpl(tryfirst=True)
def pytest_runtest_teardown(item, nextitem):
    """The victim pool's engine (some 3 GB) is let go after the last test of the session that uses it, not held
    through the rest of the session."""
    if "victim_pool" in item.funcargs and not any(
            "victim_pool" in getattr(later, "fixturenames", ())
            for later in item.session.items[item.session.items.index(item) + 1:]):
        item.funcargs["victim_pool"].shutdown()
# ==== END models: engine fixtures ====

# ==== BEGIN data: dataset fixtures (owner: the EmoCaustics task, emocaustics/tasks/longdialogue/data) ====
# `published_root`: the published EmoCaustics data (EMOCAUSTICS_DATA, else ../shared/datasets/emocaustics beside the
#   checkout); the test is skipped, saying so, when neither holds chat/ and emo/.
# `published_corpus`: that data loaded once per session with the default (verified) pairing.
from pathlib import Path as _data_Path

_DATA_REPO = _data_Path(__file__).resolve().parents[1]


def _data_published_root() -> "_data_Path | None":
    env = _models_os.environ.get("EMOCAUSTICS_DATA")
    for cand in ([_data_Path(env)] if env else []) + [_DATA_REPO.parent / "shared" / "datasets" / "emocaustics"]:
        if (cand / "chat").is_dir() and (cand / "emo").is_dir():
            return cand
    return None


@_models_pytest.fixture(scope="session")
def published_root():
    root = _data_published_root()
    if root is None:
        _models_pytest.skip("published EmoCaustics data not found: set EMOCAUSTICS_DATA or place it at "
                            "../shared/datasets/emocaustics")
    return root


@_models_pytest.fixture(scope="session")
def published_corpus(published_root):
    from emocaustics.tasks.longdialogue.data.load import load_corpus

    return load_corpus(published_root)
# ==== END data: dataset fixtures ====

# ==== BEGIN cache: the response cache of each test (owner: the shared cache, emocaustics/models/cacheplace.py) ====
# Every test gets an empty shared response cache of its own (`EMOCAUSTICS_RESPONSE_CACHE`, a fresh folder), so that no
# answer cached by another test, or by this user's own runs in ~/.cache/emocaustics, hides a model call a test counts;
# module- and session-scoped fixtures share one folder of this session's. A test that wants two runs to share a cache
# runs them within itself.
@_models_pytest.fixture(scope="session", autouse=True)
def _session_response_cache(tmp_path_factory):
    with _models_pytest.MonkeyPatch.context() as mp:
        mp.setenv("EMOCAUSTICS_RESPONSE_CACHE", str(tmp_path_factory.mktemp("responses-session")))
        yield


@_models_pytest.fixture(autouse=True)
def _own_response_cache(_session_response_cache, tmp_path_factory, monkeypatch):
    monkeypatch.setenv("EMOCAUSTICS_RESPONSE_CACHE", str(tmp_path_factory.mktemp("responses")))


# A run folder's lock is let go when its process ends (jobs/rundir.py); a test is no process, so a run a test left
# held (one stopped by an error, kept for a resume in the same process) is let go after the test, and a later test's
# Ctrl-C does not name it.
@_models_pytest.fixture(autouse=True)
def _runs_let_go():
    yield
    from emocaustics.jobs import rundir

    for held in list(rundir._HELD.values()):
        rundir._let_go(held)
# ==== END cache ====


def pytest_collection_modifyitems(config, items):
    """Under mutmut (a worker testing one mutant: `make mutation`), the covering tests run fastest first, by the
    durations mutmut recorded in its coverage pass (mutants/mutmut-stats.json). mutmut runs them with -x, and its fork
    server hands them over in no order (mutmut 3.8's plain fork runner sorts them; the fork server, which this project
    uses, does not): a mutant a fast unit test kills then costs that test, not first the real-time end-to-end tests that
    also cover its function. Outside mutmut nothing changes."""
    import json
    import os

    if "__mutmut_" not in os.environ.get("MUTANT_UNDER_TEST", "") or not _Path("mutmut-stats.json").is_file():
        return
    seconds = json.loads(_Path("mutmut-stats.json").read_text(encoding="utf-8")).get("duration_by_test", {})
    items.sort(key=lambda item: seconds.get(item.nodeid, float("inf")))
    module = os.environ["MUTANT_UNDER_TEST"]
    scope = next((tests for prefix, tests in MUTATION_SCOPE.items() if module.startswith(prefix)), None)
    kept = [item for item in items if scope is None or item.nodeid.startswith(scope)]
    if kept and len(kept) < len(items):  # never none: pytest's "no tests" is not a verdict on the mutant
        config.hook.pytest_deselected(items=[item for item in items if item not in kept])
        items[:] = kept


# Under mutmut, a mutant of these modules runs only against these tests. The framework's end-to-end tests also pass
# through stats/ and the tasks' scorers (a summary table has intervals), and mutmut's coverage pass adds them: 70 s
# of real-time runs for every surviving stats mutant, which put the stats area past an hour (issue 44). The scorers'
# and statistics' reports were measured against their own tests, as before those tests were in the selection.
MUTATION_SCOPE = {
    "emocaustics.stats.": ("tests/stats/", "tests/tasks/"),
    "emocaustics.tasks.": ("tests/tasks/", "tests/stats/"),
}


ALARM_S = 60  # under mutmut: the wall time a test may take (the slowest test of the selection takes about 7 s)


@_models_pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    """Under mutmut, a test a mutant makes hang fails after 60 s of wall time (a hang is a kill, as mutmut means a
    timeout to be). mutmut limits a mutant by CPU time only, and a test asleep in an event loop that a mutant left
    waiting forever (a gate that never grants) uses none: the area's run never ended. Outside mutmut nothing changes."""
    import os
    import signal

    if "__mutmut_" not in os.environ.get("MUTANT_UNDER_TEST", ""):
        yield
        return

    def hung(signum, frame):
        raise TimeoutError(f"{item.nodeid}: no end after {ALARM_S} s under {os.environ['MUTANT_UNDER_TEST']}")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(ALARM_S)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
