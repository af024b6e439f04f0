"""A local spec's model pool made: `ModelPool`'s arguments for a smoke/vllm spec (`models.pool.get_pool` makes the
pool from them), and a vLLM spec's engine options checked against vLLM's `AsyncEngineArgs` before any replica starts.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import importlib.util
from pathlib import Path
from typing import Any

from emocaustics.core.errors import UsageError
from emocaustics.models.spec import LLMSpec


@functools.lru_cache(maxsize=1)
def engine_option_names() -> frozenset[str]:
    """The fields of vLLM's `AsyncEngineArgs`, read from its source file: importing vLLM to list them costs a job's
    driver about 10 s (more under load), which a job attaching to a running service would otherwise pay before its
    first call. Falls back to the import where the source cannot be read (tests/models/test_models_spec.py checks that
    both give the same names)."""
    try:
        found = importlib.util.find_spec("vllm")  # finds the package without running it
        source = Path(list(found.submodule_search_locations or [])[0]) / "engine" / "arg_utils.py"  # type: ignore[union-attr]
        classes = {n.name: n for n in ast.parse(source.read_text(encoding="utf-8")).body if isinstance(n, ast.ClassDef)}

        def fields(name: str) -> set[str]:
            out: set[str] = set()
            for base in classes[name].bases:  # a dataclass inherits its bases' fields
                if isinstance(base, ast.Name) and base.id in classes:
                    out |= fields(base.id)
            for stmt in classes[name].body:
                if (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)
                        and "ClassVar" not in ast.unparse(stmt.annotation)):
                    out.add(stmt.target.id)
            return out

        names = fields("AsyncEngineArgs")
        if names:
            return frozenset(names)
    except (AttributeError, IndexError, KeyError, OSError, SyntaxError, TypeError):
        pass
    from vllm.engine.arg_utils import AsyncEngineArgs

    return frozenset(f.name for f in dataclasses.fields(AsyncEngineArgs))


def check_engine_options(spec: LLMSpec, name: str) -> None:
    """Unknown vLLM engine arguments are a usage error naming them and the spec (`name`: its canonical form)."""
    unknown = sorted(set(spec.engine) - engine_option_names())
    if unknown:
        raise UsageError(f"model spec {name!r}: unknown vLLM engine option(s) {', '.join(unknown)}")


def pool_arguments(spec: LLMSpec, name: str) -> dict[str, Any]:
    """Keyword arguments of `ModelPool` for a smoke/vllm spec, named `name` (its canonical form: the registry's key,
    computed once by `get_pool`); builds the smoke model when needed (its folder's name is in the response-cache id)."""
    if spec.remote:
        raise ValueError(f"{spec.kind} specs have no model pool")
    engine = dict(spec.engine)
    check_engine_options(spec, name)
    if spec.tp > 1:
        engine["tensor_parallel_size"] = spec.tp
    model = spec.model
    if spec.kind == "smoke":
        from emocaustics.models.smoke import build_smoke_model

        model = str(build_smoke_model())  # its folder's name, a hash of its recipe, is in the identity
    return {"model": model, "name": name, "cache_id": spec.identity, "replicas": spec.replicas,
            "engine_opts": engine, "gpus_per_replica": spec.gpus, "cpus_per_replica": spec.cpus,
            "actor_options": {"scheduling_strategy": "SPREAD"} if spec.placement == "spread" else None}
