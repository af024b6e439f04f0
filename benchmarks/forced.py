"""The replay's logits processor: a request generates exactly the tokens the pipeline's engine generated for it.

Why: the smoke model's weights are random, so its greedy choices sit on near-ties that the batch's arithmetic tips
either way; the same prompt then answers differently in the pipeline and in the replay (on the chains' window step
the replay wrote 12 % more tokens, run after run), and tokens/s compares different work. With each request's recorded
output forced (every other token's logit set to -inf, one indexed write per step for the whole batch), both sides
prefill the same prompts and decode the same tokens under the same JSON grammar: the same work.

A request takes part when its sampling parameters carry `extra_args={"forced_output": [token ids]}`; after the last
recorded token it is left to the grammar (which then allows only the end of the answer).
"""

from __future__ import annotations

from typing import Any

import torch
from vllm.v1.sample.logits_processor import BatchUpdate, LogitsProcessor
from vllm.v1.sample.logits_processor.builtin import process_dict_updates

KEY = "forced_output"


class ForcedOutput(LogitsProcessor):
    def __init__(self, vllm_config: Any, device: torch.device, is_pin_memory: bool) -> None:
        self.device = device
        # batch row -> (the recorded token ids, the request's running output list: vLLM keeps it current)
        self.rows: dict[int, tuple[list[int], list[int]]] = {}

    def is_argmax_invariant(self) -> bool:
        return False

    def update_state(self, batch_update: BatchUpdate | None) -> None:
        def forced(params: Any, _prompt: Any, output: list[int]) -> tuple[list[int], list[int]] | None:
            extra = params.extra_args or {}
            return (extra[KEY], output) if KEY in extra else None

        process_dict_updates(self.rows, batch_update, forced)

    def apply(self, logits: torch.Tensor) -> torch.Tensor:
        rows, tokens = [], []
        for row, (recorded, output) in self.rows.items():
            if len(output) < len(recorded):
                rows.append(row)
                tokens.append(recorded[len(output)])
        if rows:
            r = torch.tensor(rows, device=logits.device)
            t = torch.tensor(tokens, device=logits.device)
            logits[r] = float("-inf")
            logits[r, t] = 0.0
        return logits
