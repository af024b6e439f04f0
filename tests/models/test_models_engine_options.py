"""A replica's vLLM engine arguments (models/vllm_actor.engine_options), without starting an engine."""

from __future__ import annotations

from emocaustics.models.vllm_actor import CPU_DEFAULTS, ENGINE_DEFAULTS, engine_options


def test_a_gpu_replica_prefills_at_most_2048_tokens_per_step_unless_its_spec_says_otherwise():
    # issue 31: with vllm serve's 8192 on an H100, every step prefilling other dialogues' prompts held a long
    # dialogue's chain of dependent calls for up to ~0.8 s per token (benchmarks/scale_bench.py)
    gpu = engine_options({}, cpu=False)
    assert gpu["max_num_batched_tokens"] == 2048
    assert gpu["scheduling_policy"] == "priority" and gpu["enable_prefix_caching"] is True
    assert "gpu_memory_utilization" not in gpu  # vLLM's own GPU default
    assert engine_options({"max_num_batched_tokens": 8192}, cpu=False)["max_num_batched_tokens"] == 8192


def test_a_cpu_replica_keeps_the_cpu_settings_and_vllms_own_prefill_budget():
    cpu = engine_options({"max_model_len": 4096}, cpu=True)
    assert cpu == {**ENGINE_DEFAULTS, **CPU_DEFAULTS, "max_model_len": 4096}
    assert "max_num_batched_tokens" not in cpu  # the CPU build's server default is 2048 already
