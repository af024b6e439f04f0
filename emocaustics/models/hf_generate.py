"""`transformers` generation for the `hf:` backend: one padded `model.generate` call answers a batch of chat requests.

A request with a JSON schema is constrained by xgrammar (the grammar library vLLM's structured output uses) through a
logits processor that masks, per row, the tokens its grammar does not allow; rows without a schema in the same batch
generate freely. The grammar has no free whitespace (as the vLLM replicas' `disable_any_whitespace`): a weak or random
model otherwise pads its answer with whitespace up to max_tokens.

Synchronous and Ray-free, so that it can be used and tested in-process; `hf_actor.HFModelActor` hosts it in a Ray actor
and collects concurrent requests into its batches.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from emocaustics.models.base import ChatRequest, Completion, ErrorKind
from emocaustics.models.jsonout import read_answer

# Options of an `hf:` spec besides the pool keys (models/spec.py): requests per `generate` call, seconds a batch waits
# for more concurrent requests, where and in which precision the weights live, and two `from_pretrained` arguments.
HF_KEYS = ("max_batch", "batch_wait", "device", "dtype", "trust_remote_code", "attn_implementation")
DEFAULT_MAX_BATCH = 8
MAX_GRAMMARS = 256  # compiled schemas kept per replica (a task uses a handful)


@dataclass(frozen=True, slots=True)
class HFOptions:
    max_batch: int = DEFAULT_MAX_BATCH
    batch_wait: float = 0.01
    device: str = "auto"  # auto: cuda when torch sees a GPU, else cpu
    dtype: str = "auto"  # auto: the checkpoint's dtype on a GPU, float32 on the CPU
    trust_remote_code: bool = False
    attn_implementation: str | None = None

    @classmethod
    def from_options(cls, opts: dict[str, Any]) -> "HFOptions":
        unknown = sorted(set(opts) - set(HF_KEYS))
        if unknown:
            raise ValueError(f"unknown hf option(s) {', '.join(unknown)}; allowed: {', '.join(HF_KEYS)}")
        out = cls(**opts)
        if int(out.max_batch) < 1 or float(out.batch_wait) < 0:
            raise ValueError("hf options: max_batch must be >= 1 and batch_wait >= 0")
        return out


def prompt_or_failure(tokenizer: Any, request: ChatRequest, max_len: int | None,
                      limit: str) -> tuple[list[int], int] | Completion:
    """A request's prompt token ids (its chat template applied) and the new tokens it may have, or the Completion of
    why it cannot be asked: the template failed, or the prompt leaves no room in `max_len` (named `limit`)."""
    try:
        text = tokenizer.apply_chat_template([dict(m) for m in request.messages], tokenize=False,
                                             add_generation_prompt=True)
        # The template already wrote every special token; encoding must not add a BOS a second time.
        ids = list(tokenizer.encode(text, add_special_tokens=False))
    except Exception as exc:
        return Completion(text="", error=f"chat template failed: {type(exc).__name__}: {exc}")
    if max_len is not None and len(ids) + 1 > max_len:
        return Completion(text="", prompt_tokens=len(ids), error=f"prompt too long: {len(ids)} tokens, {limit} {max_len}",
                          kind=ErrorKind.CONTEXT_LENGTH)
    return ids, min(request.sampling.max_tokens, max_len - len(ids)) if max_len else request.sampling.max_tokens


def sampling_key(request: ChatRequest) -> tuple[float, float, int | None]:
    """Requests that can share one `generate` call: same temperature, top_p and seed (max_tokens may differ)."""
    s = request.sampling
    return (s.temperature, s.top_p, s.seed if s.temperature > 0 else None)


class SchemaMask:
    """A transformers logits processor: row i follows `grammars[i]` (an xgrammar CompiledGrammar), or is free when
    that is None. One instance per `generate` call (its matchers hold the rows' grammar states)."""

    def __init__(self, grammars: list[Any], vocab_size: int) -> None:
        import xgrammar as xgr

        self._xgr = xgr
        self.matchers = [xgr.GrammarMatcher(g) if g is not None else None for g in grammars]
        self.rows = [i for i, m in enumerate(self.matchers) if m is not None]
        self.bitmask = xgr.allocate_token_bitmask(len(grammars), vocab_size)
        self.vocab_size = vocab_size
        self._first = True

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        if not self._first:  # the token chosen at the last step: advance each row's grammar over it
            for i in self.rows:
                m = self.matchers[i]
                if not m.is_terminated():
                    m.accept_token(int(input_ids[i, -1]))
        self._first = False
        active = [i for i in self.rows if not self.matchers[i].is_terminated()]
        if not active:
            return scores
        for i in active:
            self.matchers[i].fill_next_token_bitmask(self.bitmask, i)
        device = scores.device
        on_cpu = scores if device.type in ("cpu", "cuda") else scores.to("cpu")
        self._xgr.apply_token_bitmask_inplace(on_cpu, self.bitmask.to(on_cpu.device), vocab_size=self.vocab_size,
                                              indices=active)
        return on_cpu.to(device) if on_cpu is not scores else scores


class HFGenerator:
    """A causal LM and its tokenizer from a Hugging Face folder or hub name, answering batches of ChatRequests."""

    def __init__(self, model: str, options: HFOptions | None = None) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.options = o = options or HFOptions()
        self.device = ("cuda" if torch.cuda.is_available() else "cpu") if o.device == "auto" else o.device
        on_gpu = self.device.startswith("cuda")
        dtype: Any = getattr(torch, o.dtype) if o.dtype != "auto" else ("auto" if on_gpu else torch.float32)
        kwargs: dict[str, Any] = {"dtype": dtype, "trust_remote_code": bool(o.trust_remote_code)}
        if o.attn_implementation:
            kwargs["attn_implementation"] = o.attn_implementation
        if on_gpu and o.device == "auto" and torch.cuda.device_count() > 1:
            kwargs["device_map"] = "auto"  # every GPU this process sees (a replica reserved them)
        self.tokenizer = AutoTokenizer.from_pretrained(model, trust_remote_code=bool(o.trust_remote_code))
        self.tokenizer.padding_side = "left"  # decoder-only: the answers start right after each prompt
        self.model = AutoModelForCausalLM.from_pretrained(model, **kwargs)
        if "device_map" not in kwargs:
            self.model.to(self.device)
        self.model.eval()
        gen = self.model.generation_config
        eos = gen.eos_token_id if gen.eos_token_id is not None else self.tokenizer.eos_token_id
        self.eos_ids: list[int] = [int(e) for e in (eos if isinstance(eos, list) else [eos]) if e is not None]
        pad = gen.pad_token_id if gen.pad_token_id is not None else self.tokenizer.pad_token_id
        self.pad_id = int(pad if pad is not None else self.eos_ids[0])
        self.max_len = int(getattr(self.model.config, "max_position_embeddings", 0) or 0) or None
        self.vocab_size = int(self.model.config.vocab_size)
        self._tokenizer_info: Any = None
        self._grammars: dict[str, Any] = {}

    # -- grammars --------------------------------------------------------------------------------------------
    def grammar(self, schema: dict) -> Any:
        """The schema compiled for this tokenizer (cached); raises what xgrammar raises for a schema it rejects."""
        import xgrammar as xgr

        key = json.dumps(schema, sort_keys=True)
        if key not in self._grammars:
            if self._tokenizer_info is None:
                self._tokenizer_info = xgr.TokenizerInfo.from_huggingface(self.tokenizer, vocab_size=self.vocab_size,
                                                                          stop_token_ids=self.eos_ids)
                self._compiler = xgr.GrammarCompiler(self._tokenizer_info)
            if len(self._grammars) >= MAX_GRAMMARS:
                self._grammars.pop(next(iter(self._grammars)))
            self._grammars[key] = self._compiler.compile_json_schema(schema, any_whitespace=False)
        return self._grammars[key]

    # -- generation ------------------------------------------------------------------------------------------
    def generate(self, requests: list[ChatRequest]) -> list[Completion]:
        """One Completion per request, same order; requests must share `sampling_key` (the actor groups them).
        A request that cannot be asked (template, length, schema) fails alone; the others share one `generate`."""
        out: list[Completion | None] = [None] * len(requests)
        rows: list[tuple[int, list[int], Any, int]] = []  # (request index, prompt ids, grammar, max new tokens)
        for n, r in enumerate(requests):
            prompt = prompt_or_failure(self.tokenizer, r, self.max_len, "max_position_embeddings")
            if isinstance(prompt, Completion):
                out[n] = prompt
                continue
            ids, limit = prompt
            try:
                grammar = self.grammar(r.schema) if r.schema is not None else None
            except Exception as exc:
                out[n] = Completion(text="", prompt_tokens=len(ids),
                                    error=f"schema rejected: {type(exc).__name__}: {exc}")
                continue
            rows.append((n, ids, grammar, max(1, limit)))
        if rows:
            for (n, ids, _, limit), (tokens, cut) in zip(rows, self._generate_rows(requests[rows[0][0]], rows)):
                out[n] = self._completion(requests[n], tokens, cut, len(ids), limit)
        return out  # type: ignore[return-value]

    def _generate_rows(self, first: ChatRequest,
                       rows: list[tuple[int, list[int], Any, int]]) -> list[tuple[list[int], bool]]:
        import torch

        width = max(len(ids) for _, ids, _, _ in rows)
        input_ids = torch.full((len(rows), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for i, (_, ids, _, _) in enumerate(rows):
            input_ids[i, width - len(ids):] = torch.tensor(ids, dtype=torch.long)
            mask[i, width - len(ids):] = 1
        grammars = [g for _, _, g, _ in rows]
        s = first.sampling
        kwargs: dict[str, Any] = {"max_new_tokens": max(k for _, _, _, k in rows), "eos_token_id": self.eos_ids,
                                  "pad_token_id": self.pad_id, "do_sample": s.temperature > 0}
        if s.temperature > 0:
            kwargs.update(temperature=s.temperature, top_p=s.top_p)
            if s.seed is not None:
                torch.manual_seed(s.seed)
        else:
            kwargs.update(temperature=None, top_p=None, top_k=None)  # greedy: no sampling settings to warn about
        if any(g is not None for g in grammars):
            from transformers import LogitsProcessorList

            kwargs["logits_processor"] = LogitsProcessorList([SchemaMask(grammars, self.vocab_size)])
        device = self.model.device
        with torch.inference_mode():
            generated = self.model.generate(input_ids=input_ids.to(device), attention_mask=mask.to(device), **kwargs)
        new = generated[:, width:].tolist()
        return [self._answer_tokens(tokens, limit) for tokens, (_, _, _, limit) in zip(new, rows)]

    def _answer_tokens(self, tokens: list[int], limit: int) -> tuple[list[int], bool]:
        """A row's tokens up to and with its first end token, or its first `limit` (cut: True): rows of one batch may
        ask for fewer tokens than the batch generated, and a finished row is padded to the batch's length."""
        end = next((i for i, t in enumerate(tokens[:limit]) if t in self.eos_ids), None)
        return (tokens[:end + 1], False) if end is not None else (tokens[:limit], True)

    def _completion(self, request: ChatRequest, tokens: list[int], cut: bool, prompt_tokens: int,
                    limit: int) -> Completion:
        text = self.tokenizer.decode([t for t in tokens if t not in self.eos_ids], skip_special_tokens=True)
        return read_answer(text, request, cut, limit, prompt_tokens=prompt_tokens, generated_tokens=len(tokens))
