"""Reliability: extraction through an OpenAI-compatible endpoint that answers 429, 500, hangs past the timeout, drops
the connection, or returns truncated / invalid JSON -> bounded retries with back-off, no dialogue lost, every final
failure reported with its reason.

The endpoint is the local fake (fakes/openai_routed.py, on 127.0.0.1): five dialogues get one fault on every request
(so they must end as failure rows), two get a mix of all faults at random rates (so retries must carry them through).
The run goes through the job's own solving plan (`solve.plan.asolve_samples`) with the model the factory makes of the
spec `openai:MODEL@http://127.0.0.1:PORT/v1`.
"""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path

import pytest

from fakes.openai_chat import Faults
from fakes.openai_routed import RoutedFakeServer

pytestmark = pytest.mark.slow

FATAL = {1: "500", 2: "429", 3: "hang", 4: "drop", 5: "invalid"}  # dialogue -> the fault of every request
MIXED = (6, 7)  # random faults at the rates below; these must come through
REASON = {"500": "HTTP 500", "429": "HTTP 429", "hang": "timeout", "drop": "connection error",
          "invalid": "invalid JSON"}
TIMEOUT, MAX_RETRIES, JSON_RETRIES, STEP_RETRIES = 0.5, 2, 1, 2
RETRY_AFTER_MS = 150
FATAL_UTTERANCES = 2  # their calls are the run's critical path: the 429 route's, requeued behind the endpoint's
# pause, and the hang route's, each attempt a timeout (3 utterances: 27 s of the run's 28, the mixed dialogues 11 s)


def test_endpoint_faults_lose_no_dialogue_and_name_each_final_failure(ray_local, tmp_path: Path) -> None:
    from emocaustics.tasks.longdialogue.data.load import load_sample
    from emocaustics.models.factory import make_llm
    from emocaustics.models.spec import parse_llm_spec
    from emocaustics.tasks.longdialogue.extract.dialogue import ExtractConfig
    from extract_doubles import solve_dialogues

    corpus = load_sample()
    # The doomed dialogues keep their first FATAL_UTTERANCES utterances: every one of their calls runs out its whole
    # retry budget (a hang costs the timeout per attempt), and a few calls per fault show the bound as well as ten.
    dialogues = [replace(corpus.dialogues[i], utterances=corpus.dialogues[i].utterances[:FATAL_UTTERANCES])
                 for i in FATAL] + [corpus.dialogues[i] for i in MIXED]
    by_id = {d.id: d for d in dialogues}
    markers = {d.id: d.utterances[0].sentence for d in dialogues}
    faults = Faults(rate_429=0.08, rate_500=0.08, rate_hang=0.04, rate_drop=0.08, rate_truncated=0.08,
                    rate_invalid=0.08, retry_after_ms=RETRY_AFTER_MS, hang_seconds=10, seed=7)
    routes = {markers[i]: b for i, b in FATAL.items()}
    out = tmp_path / "pred"
    cfg = ExtractConfig(task="sextuple", method="direct", retries=STEP_RETRIES)
    with RoutedFakeServer(faults, routes=routes) as server:
        spec = (f"openai:fake-model@{server.base_url}?timeout={TIMEOUT}&max_retries={MAX_RETRIES}"
                f"&json_retries={JSON_RETRIES}&concurrency=32&max_throttled={MAX_RETRIES}"
                # A live endpoint with doomed routes: the hang route times out every request of its dialogue and
                # the 500 route fails every one of its (parallel) requests, which must not trip the dead-endpoint
                # breaker for everyone (that is tests/runs/test_dead_endpoint.py). A 429 is requeued by the adaptive
                # limit, not retried by the client: max_throttled bounds it like max_retries bounds the rest.
                "&max_connection_failures=1000&max_server_errors=1000")
        t0 = time.perf_counter()
        rows = solve_dialogues(make_llm(parse_llm_spec(spec), cache_dir=None), dialogues, cfg, out, concurrency=8)
        seconds = time.perf_counter() - t0

    # no dialogue lost: each one is exactly one prediction file or exactly one failure row
    failures = [json.loads(line) for line in (out / "failures.jsonl").read_text(encoding="utf-8").splitlines()]
    failed = {}
    for row in failures:
        assert row["dialogue"] not in failed, f"dialogue {row['dialogue']} has two failure rows"
        failed[row["dialogue"]] = row
    for d in dialogues:
        has_file = (out / f"output_chat_{d.id}.json").exists()
        assert has_file != (d.id in failed), f"dialogue {d.id}: prediction file {has_file}, failure row {d.id in failed}"
    assert sorted(int(r["id"]) for r in rows) == sorted(d.id for d in dialogues)
    assert {int(r["id"]) for r in rows if not r["ok"]} == set(failed)

    # the always-faulty dialogues fail, each with its own reason and the step it failed in
    assert set(failed) == set(FATAL), f"failed: {sorted(failed)}; mixed-fault dialogues must come through"
    for i, behaviour in FATAL.items():
        row = failed[i]
        assert REASON[behaviour] in row["reason"], (i, behaviour, row)
        assert row["step"] and row["step"].startswith("direct utterance"), row

    # bounded retries: never more HTTP attempts than client retries x JSON re-asks x step retries allow, and at
    # least one retry per call
    per_call = (MAX_RETRIES + 1) * (JSON_RETRIES + 1) * (STEP_RETRIES + 1)
    for i, behaviour in FATAL.items():
        n_utt = len(by_id[i].utterances)
        tries = len(server.arrivals_for(markers[i]))
        assert 2 * n_utt <= tries <= per_call * n_utt, (i, behaviour, tries, n_utt)
        if behaviour in ("500", "429", "drop", "hang"):  # transport faults: the client retried each body
            assert max(_same_body_counts(server, markers[i])) == MAX_RETRIES + 1, (i, behaviour)

    # back-off: a retried 429/500 waited what the server asked (Retry-After); a dropped connection waited the
    # client's exponential delay (0.5 s x jitter >= 0.375 s)
    for marker, floor in ((markers[1], RETRY_AFTER_MS / 1000 * 0.8), (markers[2], RETRY_AFTER_MS / 1000 * 0.8),
                          (markers[4], 0.3)):
        gaps = server.retry_gaps(marker)
        assert gaps and min(gaps) >= floor, (marker[:10], floor, sorted(gaps)[:3])

    # the mixed dialogues really met faults (else this test proves nothing about recovering from them)
    mixed_faults = {a.behaviour for a in server.arrivals_for(None)} - {"ok"}
    assert len(mixed_faults) >= 4, mixed_faults
    # bounded time: a guard against a run that never ends, not a speed target (those live in benchmarks/)
    assert seconds < 600, f"run took {seconds:.1f}s"
    print(f"\n[reliability] openai faults: {len(server.arrivals)} requests, {dict(server.counts)}, "
          f"{sum(r['ok'] for r in rows)} predicted, {len(failed)} failure rows, {seconds:.1f}s")


def _same_body_counts(server: RoutedFakeServer, marker: str) -> list[int]:
    counts: dict[str, int] = {}
    for a in server.arrivals_for(marker):
        counts[a.body_key] = counts.get(a.body_key, 0) + 1
    return list(counts.values())
