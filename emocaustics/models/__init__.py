"""Models: one interface (`base.LLM`) over every provider and every layer in front of one.

- `base`: the `LLM` protocol, `ModelBase` (its defaults) and `Layer` (a model in front of another); `Embedder`.
- `registry`: the providers by name (openai, anthropic, ollama, vllm, smoke, and plug-ins through the entry-point
  group `emocaustics.providers`); `spec`: spec strings parsed into `LLMSpec`.
- `factory.make_llm(spec, cache_dir=None)`: the provider's model with the layers composed in front of it:
  `cache` (response cache), `batch` (batch APIs), `breaker` + `ratelimit`, `budget`.
- The providers' models: `openai_chat`, `anthropic_chat`, `litellm_chat` (what they share: `chatclient`), `pool`
  (Ray-hosted replicas: `vllm_actor`), `smoke` (the tiny random model); `embedders` beside them.

Nothing is imported here, so that `import emocaustics.models` stays cheap (no ray, vllm or torch).
"""
