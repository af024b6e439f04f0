"""The response cache's key and a model's identity (issue 53, findings 1, 5 and 6): every sampling field and the
model's identity are in the key; local weights are known by a fingerprint of their files, so replaced weights are a
new model; the job's `cache:` is a mode or a folder written as a path; a damaged cache file is one line before any
sample runs. Fast: no engine, no network."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from emocaustics.core.errors import UsageError
from emocaustics.models.base import ChatRequest, Completion, Sampling
from emocaustics.models.cache import request_key
from emocaustics.models.cacheplace import choose
from emocaustics.models.cachestore import ResponseCache
from emocaustics.models.spec import SAMPLED, fingerprint, parse_llm_spec

MESSAGES = ({"role": "user", "content": "hi"},)


def test_every_sampling_field_the_request_and_the_identity_are_in_the_key() -> None:
    base = ChatRequest(MESSAGES)
    variants = [ChatRequest(MESSAGES, sampling=Sampling(**change)) for change in
                ({"max_tokens": 7}, {"temperature": 0.7}, {"top_p": 0.9}, {"seed": 1}, {"seed": None})]
    variants += [ChatRequest(({"role": "user", "content": "hi!"},)), ChatRequest(MESSAGES, schema={"type": "object"}),
                 ChatRequest(({"role": "system", "content": "hi"},))]
    keys = [request_key("vllm:/m#aaaa", r) for r in [base, *variants]] + [request_key("vllm:/m#bbbb", base)]
    assert len(set(keys)) == len(keys)
    # what does not change the answer is not in it: placement, priority, whether a caller waits on it
    same = ChatRequest(MESSAGES, affinity="dialogue-3", priority=-4, live=True)
    assert request_key("vllm:/m#aaaa", same) == keys[0]
    assert request_key("vllm:/m#aaaa", ChatRequest(MESSAGES, sampling=Sampling())) == keys[0]


def _weights(folder: Path, fill: bytes) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text('{"model_type": "qwen2"}', encoding="utf-8")
    (folder / "model.safetensors").write_bytes(fill * (3 * SAMPLED))  # more than the two sampled ends
    return folder


def _same_times(path: Path, like: os.stat_result) -> None:
    os.utime(path, ns=(like.st_atime_ns, like.st_mtime_ns))


def test_replaced_weights_are_a_new_identity(tmp_path: Path) -> None:
    folder = _weights(tmp_path / "model", b"a")
    spec = parse_llm_spec(f"vllm:{folder}")
    first = spec.identity
    assert first == parse_llm_spec(f"vllm:{folder}?replicas=2&tp=2").identity  # placement is no part of it
    assert first != parse_llm_spec(f"vllm:{folder}?max_model_len=512").identity  # an engine option is
    assert first.startswith(f"vllm:{folder}#") and spec.identity == first  # stable while the files stay
    weights = folder / "model.safetensors"
    before = weights.stat()
    weights.write_bytes(b"b" * (3 * SAMPLED))  # another model of the same size, written over the old one
    assert spec.identity != first
    _same_times(weights, before)  # copied with the old file's times kept (cp -p, rsync -a): the content tells
    assert spec.identity != first
    weights.write_bytes(b"a" * (3 * SAMPLED))
    _same_times(weights, before)
    assert spec.identity == first  # the very same files again
    (folder / "config.json").write_text('{"model_type": "llama"}', encoding="utf-8")
    assert spec.identity != first
    (folder / ".cache").mkdir()  # a download's bookkeeping is not the model
    (folder / ".cache" / "x.lock").write_text("1", encoding="utf-8")
    assert fingerprint(folder) == spec.identity.partition("#")[2]


def test_one_file_of_weights_a_hub_name_and_an_endpoint(tmp_path: Path) -> None:
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"x" * 10)
    one = parse_llm_spec(f"vllm:{gguf}").identity
    gguf.write_bytes(b"y" * 10)
    assert parse_llm_spec(f"vllm:{gguf}").identity != one
    assert parse_llm_spec("vllm:Org/not-here?revision=abc").identity == "vllm:Org/not-here?revision=abc"
    remote = parse_llm_spec("openai:gpt-x@http://127.0.0.1:9/v1?concurrency=3")
    from emocaustics.models.factory import openai_client

    assert remote.identity == "openai:gpt-x@http://127.0.0.1:9/v1" == openai_client(remote).cache_id


def test_the_pool_keys_the_cache_on_the_identity(tmp_path: Path) -> None:
    from emocaustics.models.poolargs import pool_arguments

    spec = parse_llm_spec(f"vllm:{_weights(tmp_path / 'model', b'a')}?replicas=2")
    assert pool_arguments(spec, spec.canonical())["cache_id"] == spec.identity


def test_an_embedders_identity_follows_its_weights(tmp_path: Path) -> None:
    from emocaustics.models.embedders import make_embedder

    folder = _weights(tmp_path / "embedder", b"a")
    embedder = make_embedder(str(folder))
    first = embedder.identity  # type: ignore[attr-defined]
    (folder / "model.safetensors").write_bytes(b"c" * (3 * SAMPLED))
    assert embedder.identity != first and embedder.identity.startswith(f"{folder}#")  # type: ignore[attr-defined]
    assert embedder.name == str(folder)  # reports still name it as given


@pytest.mark.parametrize("word,close", [("readonly", "read-only"), ("read_only", "read-only"), ("of", "off"),
                                        ("shared", None)])
def test_a_mistyped_mode_is_an_error_not_a_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, word: str,
                                                  close: str | None) -> None:
    from emocaustics.jobs.spec import load_job

    monkeypatch.chdir(tmp_path)
    with pytest.raises(UsageError) as raised:
        choose(word)
    text = str(raised.value)
    assert text.startswith(f"{word!r} is not a cache mode (on, off, read-only") and f"./{word}," in text
    assert (f"did you mean {close!r}" in text) == (close is not None)
    job = tmp_path / "job.yaml"
    job.write_text("name: x\nmodels: {m: {spec: smoke}}\nruns: [{task: sextuple, method: direct, model: m}]\n"
                   f"cache: {word}\n", encoding="utf-8")
    with pytest.raises(UsageError, match=rf"job.yaml: cache: Value error, {word!r} is not a cache mode \(on, off,"):
        load_job(job)
    assert list(tmp_path.iterdir()) == [job]  # no folder named after the typo


def test_a_folder_is_given_as_a_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert choose("./readonly").folder == Path("readonly")
    assert choose("cache/mine").folder == Path("cache/mine")
    assert choose("~/c").folder == tmp_path / "home" / "c"
    assert choose(str(tmp_path / "abs")).folder == tmp_path / "abs"


def _damaged(folder: Path) -> Path:
    cache = ResponseCache(folder / "responses.sqlite")
    cache.put_many("m", [(f"k{i:05d}", Completion(text="x" * 200)) for i in range(2000)])
    cache.close()
    path = folder / "responses.sqlite"
    with path.open("r+b") as f:  # pages of the table written over; the file's header and schema are whole
        f.seek(path.stat().st_size // 2)
        f.write(os.urandom(3 * 4096))
    return path


@pytest.mark.parametrize("where", ["middle", "header"])
def test_a_damaged_cache_is_one_line_naming_it_and_the_ways_out(tmp_path: Path, where: str) -> None:
    path = _damaged(tmp_path / "cache")
    if where == "header":
        with path.open("r+b") as f:
            f.write(b"not sqlite at all" * 10)
    with pytest.raises(UsageError) as raised:
        choose(str(tmp_path / "cache"))
    text = str(raised.value)
    assert str(path) in text and "damaged" in text and "--no-cache" in text and "move the file away" in text
    assert "\n" not in text and raised.value.exit_code == 2
    if where == "header":  # opened by another way (a model actor, `make_llm(cache_dir=...)`): the same line
        with pytest.raises(UsageError, match="damaged"):
            ResponseCache(path)


def test_a_whole_cache_is_checked_quickly_and_passes(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "c" / "responses.sqlite")
    cache.put_many("m", [("k", Completion(text="x"))])
    cache.close()
    assert choose(str(tmp_path / "c")).path == tmp_path / "c" / "responses.sqlite"
    assert choose(str(tmp_path / "new")).path.parent == tmp_path / "new"  # no file yet: nothing to check
    assert sqlite3.connect(tmp_path / "c" / "responses.sqlite").execute("SELECT count(*) FROM responses").fetchone() \
        == (1,)


def test_a_run_on_a_damaged_cache_stops_before_any_sample(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from emocaustics.cli import main
    from emocaustics.jobs.runner import run_job
    from emocaustics.jobs.spec import load_job

    path = _damaged(tmp_path / "cache")
    job = tmp_path / "job.yaml"
    job.write_text("name: damaged\nmodels: {m: {spec: 'openai:x@http://127.0.0.1:9/v1'}}\n"
                   "runs: [{task: sextuple, method: direct, model: m}]\nscoring: {judge: none}\n"
                   f"cache: {tmp_path / 'cache'}\n", encoding="utf-8")
    assert main(["run", str(job), "--out", str(tmp_path / "dry"), "--dry-run"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"emocaustics: error: response cache {path} is damaged (") and "\n" not in err
    assert err.endswith("run with --no-cache (cache: off), or move the file away (a new one is made)")
    with pytest.raises(UsageError, match=f"response cache {path} is damaged"):
        run_job(load_job(job), out=str(tmp_path / "run"), check=False)  # no endpoint is asked: no check, no sample
    assert not list((tmp_path / "run").rglob("predictions.jsonl"))
