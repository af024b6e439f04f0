"""A benchmark-only tap on the vLLM engine inside a model-pool replica: it records every request the pipeline issued.

Why at the engine and not around the pipeline's LLM object: the pipeline under test is the real one
(`run_extract`: Ray Data stage -> model pool -> per-dialogue state machine inside the replica actor), and none of it
takes a hook. The tap wraps `AsyncLLM.generate` of the replica's engine, observes each request as the engine sees it
(prompt token ids after the chat template, sampling parameters, guided-JSON schema) and passes every output through
untouched. Per request it keeps: submit / first-token / finish times (wall clock, comparable across processes),
prompt and generated token counts, the tokens vLLM served from its prefix cache, the finish reason and the answer text,
plus the Ray task that issued it (one `run_one` call = one dialogue), so that a dialogue's dependent steps can be
followed on a timeline.

Installed and read through `pool.run(fn, [item])`, which runs `fn(llm, item)` inside the replica; `llm` is then the
actor's `EngineLLM`, whose `_actor._engine` is the `AsyncLLM`. That reaches into private attributes on purpose: this
is instrumentation for a benchmark, not product code, and it only observes.
"""

from __future__ import annotations

import os
import pickle
import time
from typing import Any


def _engine(llm: Any) -> Any:
    actor = getattr(llm, "_actor", None)
    engine = getattr(actor, "_engine", None)
    if engine is None:
        raise RuntimeError("engine tap: the replica's engine is not started (call pool.start() first)")
    return engine


def _task_id() -> str | None:
    try:
        import ray

        return ray.get_runtime_context().get_task_id()
    except Exception:  # outside Ray, or no task context: the grouping is then unknown, never guessed
        return None


class EngineTap:
    def __init__(self, engine: Any) -> None:
        self.records: list[dict[str, Any]] = []
        self.schemas: dict[str, int] = {}  # schema JSON -> index, so that each distinct schema is stored once
        self._inner = engine.generate
        engine.generate = self.generate

    def _params(self, params: Any) -> dict[str, Any]:
        import json

        so = getattr(params, "structured_outputs", None)
        schema = getattr(so, "json", None) if so is not None else None
        if schema is not None and not isinstance(schema, str):
            # key order kept: a JSON grammar writes an object's properties in the schema's order, so sorted keys
            # would replay another grammar (and other answers) than the one the pipeline ran
            schema = json.dumps(schema, ensure_ascii=False)
        sid = None
        if schema is not None:
            sid = self.schemas.setdefault(schema, len(self.schemas))
        return {"max_tokens": params.max_tokens, "temperature": params.temperature, "top_p": params.top_p,
                "seed": params.seed, "schema": sid}

    async def generate(self, prompt: Any, params: Any, request_id: str, *args: Any, **kwargs: Any) -> Any:
        ids = prompt.get("prompt_token_ids") if isinstance(prompt, dict) else None
        rec: dict[str, Any] = {"request_id": request_id, "task": _task_id(), "submit": time.time(),
                               "prompt_ids": list(ids) if ids is not None else None, **self._params(params)}
        final = None
        # the replica asks for the final output only: the time of the first token is then not seen here
        streamed = getattr(getattr(params, "output_kind", None), "name", "") != "FINAL_ONLY"
        try:
            async for out in self._inner(prompt, params, request_id, *args, **kwargs):
                if final is None and streamed:
                    rec["first"] = time.time()
                final = out
                yield out
        except BaseException as exc:
            rec["error"] = f"{type(exc).__name__}: {exc}"
            raise
        finally:
            rec["finish"] = time.time()
            if final is not None and final.outputs:
                seq = final.outputs[0]
                rec.update(generated=len(seq.token_ids), output_ids=list(seq.token_ids), text=seq.text,
                           finish_reason=seq.finish_reason,
                           cached=int(final.num_cached_tokens or 0))
            self.records.append(rec)


async def install(llm: Any, _item: Any) -> dict[str, Any]:
    """Put a fresh tap on this replica's engine (replacing an earlier one); returns the pids to watch."""
    import psutil

    engine = _engine(llm)
    old = getattr(engine, "_bench_tap", None)
    if old is not None:
        engine.generate = old._inner
    engine._bench_tap = EngineTap(engine)
    me = psutil.Process()
    return {"actor_pid": me.pid, "engine_pids": [c.pid for c in me.children(recursive=True)]}


async def dump(llm: Any, path: str) -> int:
    """Write the records so far (and the schema table) to `path` as a pickle, clear them; returns how many."""
    engine = _engine(llm)
    tap: EngineTap = engine._bench_tap
    records, tap.records = tap.records, []
    schemas = [s for s, _ in sorted(tap.schemas.items(), key=lambda kv: kv[1])]
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "wb") as f:
        pickle.dump({"records": records, "schemas": schemas, "model": llm._actor.model,
                     "engine_opts": llm._actor.engine_opts, "scheduler": scheduler_limits(engine)}, f)
    os.replace(tmp, path)
    return len(records)


def scheduler_limits(engine: Any) -> dict[str, int]:
    """The batch limits the engine actually runs with (its usage context's defaults unless the spec set them): the
    replay must use these, not the defaults its own `vllm.LLM` would pick."""
    sched = engine.vllm_config.scheduler_config
    return {"max_num_seqs": int(sched.max_num_seqs), "max_num_batched_tokens": int(sched.max_num_batched_tokens)}


async def remove(llm: Any, _item: Any) -> None:
    engine = _engine(llm)
    tap = getattr(engine, "_bench_tap", None)
    if tap is not None:
        engine.generate = tap._inner
        del engine._bench_tap


async def reset_prefix_cache(llm: Any, _item: Any) -> bool:
    """Empty the engine's prefix cache, so that each method starts cold (as the replay does)."""
    return bool(await _engine(llm).reset_prefix_cache())
