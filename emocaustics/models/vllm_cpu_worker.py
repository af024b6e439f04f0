"""vLLM's CPU worker with seeded sampling that survives a prompt prefilled in chunks (passed as `worker_cls`).

Why: a request with a seed and temperature > 0 gets its own `torch.Generator`. When a step prefills only part of its
prompt (chunked prefill: the prompt, or the batch it joins, exceeds `max_num_batched_tokens`), vLLM samples a token
for it anyway, throws it away and rewinds the generator with `set_offset(get_offset() - 4)`, an API only CUDA
generators have. On the CPU build that raises `RuntimeError: CPU Generator does not use offset` in the worker, the
engine core dies, and so did every self-consistency question (`samples: 3`) on the CPU engine: their three seeded
requests share one prompt and arrive together, so one of them is always prefilled in chunks.

The fix keeps the meaning of vLLM's rewind: the generator of a request whose token is thrown away is held out of
that step's sampling (its row is drawn from the default generator, and discarded), so a seed yields the same tokens
however the prompt was chunked. Nothing else about the worker or the runner changes.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from vllm.v1.worker.cpu_model_runner import CPUModelRunner
from vllm.v1.worker.cpu_worker import CPUWorker


class SeededCPUModelRunner(CPUModelRunner):
    """CPUModelRunner whose discarded samples do not touch the request's own generator (no CUDA-only rewind)."""

    _held: dict[int, Any]

    def _sample(self, logits: Any, spec_decode_metadata: Any) -> Any:
        n = self.input_batch.num_reqs
        generators = self.input_batch.generators  # the very dict the sampling metadata holds
        generators.update(getattr(self, "_held", {}))  # a step that failed between sampling and bookkeeping
        discarded = np.nonzero(self.discard_request_mask.np[:n])[0]
        self._held = {int(i): generators.pop(int(i)) for i in discarded if int(i) in generators}
        try:
            return super()._sample(logits, spec_decode_metadata)
        except BaseException:
            generators.update(self._held)
            self._held = {}
            raise

    def _bookkeeping_sync(self, *args: Any, **kwargs: Any) -> Any:
        # the held generators are absent here, so vLLM's rewind loop finds none to rewind; they come back untouched
        try:
            return super()._bookkeeping_sync(*args, **kwargs)
        finally:
            self.input_batch.generators.update(getattr(self, "_held", {}))
            self._held = {}


class SeededCPUWorker(CPUWorker):
    def init_device(self) -> None:
        super().init_device()
        runner = getattr(self, "model_runner", None)
        # Only the V1 runner has the rewind (V2 needs Triton, absent on CPU); a runner of another shape is left as is.
        if type(runner) is CPUModelRunner and hasattr(runner, "discard_request_mask"):
            runner.__class__ = SeededCPUModelRunner  # adds methods only: the built runner keeps all its state
