"""The dry run's cost forecast, built from the prompts the run itself will build.

Each config's samples go through the task's own solver path (`Task.dry_solve`: its `prepare` and `solve`, or its own
plan) against `RecordingLLM`, a stand-in for the model that records every chat request and answers it at once with a
schema-valid answer. So the documents, passages, examples, histories and windows a real run puts in its prompts are in
the forecast too, by construction: there is no second copy of any prompt to drift from the first.

Tokens are counted by `TokenCounter`: the model's own tokenizer with its chat template when it is on this machine
(the smoke model's is trained here in a second; a hub model's only when the hub cache holds it), else the
`approx_tokens` heuristic (one token per CJK character -- here: per character of three UTF-8 bytes --, one per ~4
other characters). The dry run names the counter.

What the forecast cannot know, and assumes (the dry run says so):
- answers: the stand-in answers with one item per list (or its minItems) and strings of a quarter of their schema
  bound (enum values picked by a hash of the prompt): the size of the smoke model's answers, at which
  tests/runs/test_forecast.py holds every mode within 15 % of a real run. Prompts that show earlier answers (a narrative's characters and events
  so far, a window's event bucket, the emotion chains so far) are built from those answers, so a model that answers
  much longer or shorter makes them longer or shorter. Retries of unreadable answers are not forecast.
- embeddings: the dry run loads no embedder. Retrieval (AER `context: retrieve`) and similarity steps (EmoCaustics
  `rag`, `window`'s event joins) see `StandInEmbedder`'s vectors: pseudo-random per text, so retrieval picks top-k
  passages of typical size but not the ones a real embedder would, and similarity thresholds are rarely met (a `rag`
  prompt is forecast without its retrieved lines: at most top_k lines fewer).
- generated tokens: each request's own `max_tokens` (the bound its solver sets, from the answer schema), so an
  upper bound: a model stops at the end of its answer, never past the bound (retries aside).
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from emocaustics.models.base import ChatRequest, Completion

if TYPE_CHECKING:
    from emocaustics.models.spec import LLMSpec

MESSAGE_OVERHEAD = 4  # heuristic counter: role and separators of one chat message

Messages = tuple[dict[str, str], ...]


@dataclass
class TokenCounter:
    """Prompt tokens of chat requests: a `tokenizers.Tokenizer` over the chat template's text (as the engine counts a
    chat prompt), or the heuristic when `tokenizer` is None."""

    name: str  # what the dry run prints: "tokenizer of smoke" / "approx_tokens heuristic (...)"
    tokenizer: Any = None
    template: Any = None  # a jinja2 template of the model's chat template; None: contents plus MESSAGE_OVERHEAD each
    specials: dict[str, str] = field(default_factory=dict)  # bos_token, eos_token ... for the template

    def count(self, batch: list[Messages]) -> list[int]:
        if self.tokenizer is None:
            return [sum(fast_approx_tokens(m["content"]) + MESSAGE_OVERHEAD for m in msgs) for msgs in batch]
        if self.template is not None:
            texts = [self.template.render(messages=list(msgs), add_generation_prompt=True, **self.specials)
                     for msgs in batch]
            return [len(e.ids) for e in self.tokenizer.encode_batch(texts, add_special_tokens=False)]
        flat = [m["content"] for msgs in batch for m in msgs]
        lengths = iter([len(e.ids) for e in self.tokenizer.encode_batch(flat, add_special_tokens=False)])
        return [sum(next(lengths) + MESSAGE_OVERHEAD for _ in msgs) for msgs in batch]


def fast_approx_tokens(text: str) -> int:
    """The `approx_tokens` heuristic of a text, from its UTF-8 length (the prompts of a large job run to gigabytes):
    characters of three UTF-8 bytes (CJK, Hangul, most other non-Latin scripts) count one token, the rest one per ~4
    characters."""
    wide = (len(text.encode("utf-8")) - len(text)) // 2
    return wide + (len(text) - wide) // 4


def counter_for(parsed: LLMSpec | None) -> TokenCounter:
    """The counter for a model (parsed where the job was resolved; None: no model, or a malformed spec, which the
    pre-flight check names): its tokenizer where it is local (smoke: trained here; `vllm:` a local folder or a hub name
    the cache holds), else the heuristic (endpoints, uncached hub names). Never downloads."""
    head = parsed.canonical().split("?", 1)[0] if parsed is not None else ""  # how the messages name the model
    try:
        if parsed is not None and parsed.kind == "smoke":
            from emocaustics.models import smoke

            return _local_counter("smoke (built locally)", _smoke_tokenizer(), smoke.CHAT_TEMPLATE,
                                  {"eos_token": "<|im_end|>"})
        if parsed is not None and parsed.kind == "vllm":
            name = parsed.model
            path = Path(name).expanduser()
            if not path.exists():
                from emocaustics.models import hub

                found = hub.cached_path(name) if hub.looks_like_hub_name(name) else None
                if found is None:
                    return TokenCounter(f"approx_tokens heuristic ({name} is not in the local hub cache)")
                path = found
            return _folder_counter(name, path)
    except Exception as exc:  # noqa: BLE001 - a tokenizer that does not load leaves the heuristic, said so
        return TokenCounter(f"approx_tokens heuristic (the tokenizer of {head} did not load: {type(exc).__name__})")
    if parsed is not None and parsed.remote:  # the provider's fact, kept by the parsed spec
        return TokenCounter("approx_tokens heuristic (an endpoint's tokenizer is not on this machine)")
    return TokenCounter("approx_tokens heuristic")


def _local_counter(what: str, tok: Any, chat_template: str | None, specials: dict[str, str]) -> TokenCounter:
    if not chat_template:
        return TokenCounter(f"tokenizer of {what}, message contents (no chat template)", tok)
    import jinja2
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    def raise_exception(message: str) -> None:
        raise jinja2.TemplateError(message)

    # the environment transformers renders chat templates in
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])
    env.globals["raise_exception"] = raise_exception
    template = env.from_string(chat_template)
    return TokenCounter(f"tokenizer of {what}, with its chat template", tok, template, specials)


def _folder_counter(name: str, path: Path) -> TokenCounter:
    """A Hugging Face model folder's tokenizer.json and chat template (tokenizer_config.json or chat_template.jinja)."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(path / "tokenizer.json"))
    config = json.loads((path / "tokenizer_config.json").read_text(encoding="utf-8")) \
        if (path / "tokenizer_config.json").is_file() else {}
    template = config.get("chat_template")
    if isinstance(template, list):  # named templates: the default one
        template = next((t.get("template") for t in template if t.get("name") == "default"), None)
    if not template and (path / "chat_template.jinja").is_file():
        template = (path / "chat_template.jinja").read_text(encoding="utf-8")
    specials = {k: (v.get("content") if isinstance(v, dict) else v) for k, v in config.items()
                if k.endswith("_token") and isinstance(v, (str, dict))}
    return _local_counter(name, tok, template, {k: v for k, v in specials.items() if isinstance(v, str)})


@functools.lru_cache(maxsize=1)
def _smoke_tokenizer() -> Any:
    """The smoke model's tokenizer: from its build when there is one, else trained now (the same recipe and text)."""
    from tokenizers import Tokenizer

    from emocaustics.models import smoke

    built = smoke.smoke_model_dir() / "tokenizer.json"
    return Tokenizer.from_file(str(built)) if built.is_file() else smoke.bpe_tokenizer(smoke.training_text())


# -- the model and embedder stand-ins ----------------------------------------------------------------------------
FILLER = "the quick brown fox jumps over a lazy dog while "


def _pick(options: Any, seed: str) -> Any:
    return options[int(hashlib.blake2b(seed.encode("utf-8"), digest_size=4).hexdigest(), 16) % len(options)]


def stand_in_answer(schema: dict[str, Any], seed: str) -> Any:
    """A schema-valid value of typical size: strings of a quarter of their bound (a stretch of FILLER that `seed`
    picks), lists of one item (within minItems and maxItems), enum values and bounded integers picked by `seed`."""
    if "enum" in schema:
        return _pick(list(schema["enum"]), seed)
    if "const" in schema:
        return schema["const"]
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return stand_in_answer(schema[key][0], seed)
    t = schema.get("type")
    if t == "object":
        return {k: stand_in_answer(v, f"{seed}.{k}") for k, v in schema.get("properties", {}).items()}
    if t == "array":
        lo, hi = schema.get("minItems", 0), schema.get("maxItems", 2)
        n = max(lo, min(hi, 1))
        return [stand_in_answer(schema.get("items", {}), f"{seed}[{i}]") for i in range(n)]
    if t == "string":
        n = max(1, schema.get("maxLength", 16) // 4)
        at = _pick(range(len(FILLER)), seed)  # texts differ, as a model's do (equal names would merge events)
        return (FILLER * (n // len(FILLER) + 2))[at:at + n]
    if t == "integer":
        lo, hi = schema.get("minimum"), schema.get("maximum")
        return _pick(range(lo, hi + 1), seed) if lo is not None and hi is not None else (lo or 0)
    if t == "number":
        return 0.0
    if t == "boolean":
        return False
    return None


@dataclass
class RecordingLLM:
    """The `LLM` protocol for the dry run: counts each request's prompt tokens and answers at once (see above)."""

    counter: TokenCounter
    name: str = "forecast"
    calls: int = 0
    prompt_tokens: int = 0
    generated_tokens: int = 0  # the requests' own max_tokens: an upper bound on what the model generates
    live_calls: int = 0  # requests marked `live` (dependent chains): live even under `batch: true`
    live_prompt_tokens: int = 0

    async def generate(self, requests: list[ChatRequest]) -> list[Completion]:
        sizes = self.counter.count([r.messages for r in requests])
        out = []
        for r, n in zip(requests, sizes):
            self.calls += 1
            self.prompt_tokens += n
            self.generated_tokens += int(r.sampling.max_tokens or 0)
            if r.live:
                self.live_calls += 1
                self.live_prompt_tokens += n
            variant = hashlib.blake2b(r.messages[-1]["content"].encode("utf-8"), digest_size=1).digest()[0] % VARIANTS
            text = _answer(json.dumps(r.schema or {"type": "string", "maxLength": 16}, sort_keys=True), variant)
            out.append(Completion(text=text, parsed=json.loads(text), prompt_tokens=n))
        return out


VARIANTS = 16  # stand-in answers per schema, picked by the prompt's hash (answers differ between prompts)


@functools.lru_cache(maxsize=4096)
def _answer(schema_json: str, variant: int) -> str:
    return json.dumps(stand_in_answer(json.loads(schema_json), f"v{variant}"), ensure_ascii=False)


class StandInEmbedder:
    """Pseudo-random unit vectors, one per distinct text (no model): see the module docstring."""

    name = "forecast-stand-in"
    dim = 64

    async def embed(self, texts: list[str]) -> np.ndarray:
        raw = b"".join(hashlib.blake2b(t.encode("utf-8"), digest_size=self.dim).digest() for t in texts)
        m = np.frombuffer(raw, dtype=np.uint8).reshape(len(texts), self.dim).astype(np.float32) - 127.5
        return m / np.linalg.norm(m, axis=1, keepdims=True).clip(min=1e-9)


# -- one config's forecast ----------------------------------------------------------------------------------------
def forecast(task: Any, samples: list[Any], options: Any, counter: TokenCounter, *,
             prior: bool = False) -> tuple[int, int, int, int, int]:
    """LLM calls, prompt tokens, (at most) generated tokens, and of the calls those a `batch: true` model still sends
    live (models/batch.py) with their prompt tokens, of the task's own solver path over `samples` (answers and
    embeddings stood in). Raises what the task's preparation raises (a UsageError names it)."""
    llm = RecordingLLM(counter)
    task.solver.dry_solve(samples, options, llm, StandInEmbedder(), prior=prior)
    return llm.calls, llm.prompt_tokens, llm.generated_tokens, llm.live_calls, llm.live_prompt_tokens
