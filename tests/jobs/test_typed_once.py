"""A job's model facts decided once (issue 54 items 1 and 3): the provider's facts kept on the parsed spec, each
endpoint priced once by the pre-flight (the start phase's ledger spends against those prices), and the run's records
replaced whole through one helper. Fast: no Ray, no engine, no network."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from emocaustics.core.errors import WriteFailed
from emocaustics.jobs.spec import JobSpec
from emocaustics.models import budget, registry
from emocaustics.models.prices import listed, price_for
from emocaustics.models.spec import parse_llm_spec

ENDPOINT = "openai:gpt-4o@http://127.0.0.1:9/v1"


def _refused(*args, **kwargs):
    raise AssertionError("asked again after the job was resolved")


def test_a_parsed_spec_answers_from_its_own_fields_not_the_registry(monkeypatch):
    remote, local = parse_llm_spec(ENDPOINT + "?timeout=5"), parse_llm_spec("vllm:org/m?max_model_len=64")
    ollama = parse_llm_spec("ollama:gpt-4o")
    monkeypatch.setattr(registry, "find", _refused)  # the layers after the parse read the spec's fields
    assert (remote.remote, remote.priced, local.remote, local.priced, ollama.remote, ollama.priced) == (
        True, True, False, False, True, False)
    assert remote.canonical() == ENDPOINT + "?timeout=5" and remote.identity == ENDPOINT
    assert local.canonical() == "vllm:org/m?max_model_len=64"
    assert price_for(remote) == listed("gpt-4o") is not None
    assert price_for(ollama) is None and price_for(local) is None  # the same name, billed by nobody
    from emocaustics.models.poolargs import pool_arguments

    with pytest.raises(ValueError, match="openai specs have no model pool"):
        pool_arguments(remote, remote.canonical())


def _job(**extra) -> JobSpec:
    return JobSpec.model_validate({"name": "t", "models": {"api": {"spec": ENDPOINT}},
                                   "runs": [{"task": "emotion", "method": "direct", "model": "api"}], **extra})


def test_the_start_spends_against_the_preflights_prices_and_prices_nothing_again(tmp_path, monkeypatch):
    from emocaustics.jobs import preflight as cost, rundir, startup
    from emocaustics.jobs.configs import resolve
    from emocaustics.jobs.preflight import checked
    from emocaustics.models import embedders, prices as price_table

    job, run_dir = _job(max_cost_usd=1.0), tmp_path / "run"
    resolved = resolve(job, run_dir)
    loaded, prices, _ = checks = checked(resolved, network=False)  # the pre-flight phase: the samples and the prices
    assert list(loaded) == [resolved.configs[0].label] and prices == {ENDPOINT: listed("gpt-4o")}
    monkeypatch.setattr(cost, "check_budget", _refused)
    monkeypatch.setattr(price_table, "price_for", _refused)
    monkeypatch.setattr(embedders, "make_embedder", lambda spec: None)  # no embedder loaded here
    claimed = rundir.claim(run_dir, resolved, resume=False, force=False)
    try:
        startup.start_job(resolved, checks, claimed, None, False)
        assert budget.active().prices == prices and budget.active().limit_usd == 1.0
    finally:
        budget._active = None
        rundir._let_go(claimed)


def test_a_record_that_cannot_be_written_is_one_line_naming_it_and_leaves_no_temporary(tmp_path, monkeypatch):
    from emocaustics.core import provenance
    from emocaustics.jobs.rundir import RUN_FILE, Claim

    def full(self, *args, **kwargs):
        Path(self).write_bytes(b"{cut")  # a part written, then the disk is full
        raise OSError(errno.ENOSPC, "No space left on device")

    claim = Claim(tmp_path, False, {"state": "new"})
    claim.save()
    monkeypatch.setattr(Path, "write_text", full)
    with pytest.raises(WriteFailed, match=f"cannot write {tmp_path / 'provenance.json'}: No space left on device"):
        provenance.write(tmp_path, {"task": "t"})
    with pytest.raises(WriteFailed, match=f"cannot write {tmp_path / RUN_FILE}: No space left on device"):
        claim.save()
    monkeypatch.undo()
    assert sorted(p.name for p in tmp_path.iterdir()) == [RUN_FILE]  # the last whole record, no temporary
    assert (tmp_path / RUN_FILE).read_text(encoding="utf-8") == '{\n "state": "new"\n}'
