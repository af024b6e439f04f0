"""The dry run's forecast decisions (issue 44, `make mutation AREA=forecast`), pinned fast: what the token counters
count (`TokenCounter.count`'s three paths, `fast_approx_tokens`' arithmetic on hand-counted strings), which counter a
model spec gets and the name the dry run prints for it (`counter_for`, `_local_counter`, `_folder_counter`: the
smoke tokenizer, a local or hub-cached model folder with its chat template, the heuristic for endpoints), the
stand-in answers (`stand_in_answer`: schema-valid, sized as documented, picked by a hash of the seed), what
`RecordingLLM` records (calls, prompt tokens, the generated-token bound = the requests' own max_tokens, live
requests), the stand-in embedder's vectors, and what `forecast()` hands the task's dry solve and returns.

No engine, no Ray, no hub: tokenizers are stand-ins that count words (`Words`) or small `tokenizers.WordLevel`
tokenizers written to a temporary model folder; the hub cache lookup is monkeypatched; the task of `forecast()` is a
stand-in whose dry solve sends hand-made requests. Expected picks are computed here from blake2b, as the module
documents them (a hash of the seed modulo the number of options), never by calling the code under test.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import jinja2
import numpy as np
import pytest

from emocaustics.models import hub
from emocaustics.models.base import ChatRequest, Sampling
from emocaustics.models.smoke import CHAT_TEMPLATE
from emocaustics.models.spec import parse_llm_spec
from emocaustics.solve import forecast as fc
from emocaustics.solve.forecast import (FILLER, RecordingLLM, StandInEmbedder, TokenCounter, _folder_counter,
                                        _local_counter, counter_for, fast_approx_tokens, stand_in_answer)

HEURISTIC = "approx_tokens heuristic"


def pick(n: int, seed: str) -> int:
    """The index the module's documented hash picks among n options."""
    return int.from_bytes(hashlib.blake2b(seed.encode("utf-8"), digest_size=4).digest(), "big") % n


def msg(content: str, role: str = "user") -> dict[str, str]:
    return {"role": role, "content": content}


class Words:
    """A tokenizer stand-in: one token per whitespace-separated word; refuses special tokens (the engine counts a
    chat prompt without adding any: the template holds them)."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []

    def encode_batch(self, texts: list[str], add_special_tokens: bool = True) -> list[Any]:
        assert add_special_tokens is False
        self.batches.append(list(texts))
        return [SimpleNamespace(ids=[0] * len(t.split())) for t in texts]


class Template:
    """A chat template stand-in that records how it is rendered."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def render(self, **kw: Any) -> str:
        self.calls.append(kw)
        return " ".join(m["content"] for m in kw["messages"]) + (" GEN" if kw.get("add_generation_prompt") else "")


# -- fast_approx_tokens ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("text,tokens", [
    ("", 0),
    ("abc", 0),  # under 4 narrow characters: 0
    ("abcd", 1),
    ("abcdefg", 1),
    ("abcdefgh", 2),
    ("情", 1),  # one 3-byte character: one token
    ("情感事件", 4),
    ("情感abcdefgh", 4),  # 2 wide + 8 narrow // 4
    ("情感abcdefg", 3),  # 2 wide + 7 // 4
    ("éééé", 2),  # 2-byte characters: (8 - 4) // 2 = 2 "wide", 2 narrow // 4 = 0
    ("😀abcd", 2),  # a 4-byte character: (8 - 5) // 2 = 1 wide, 4 narrow // 4 = 1
])
def test_fast_approx_tokens_counts_wide_characters_one_each_and_the_rest_by_four(text, tokens):
    got = fast_approx_tokens(text)
    assert got == tokens and type(got) is int


# -- TokenCounter.count ------------------------------------------------------------------------------------------
def test_heuristic_counter_adds_four_per_message_to_its_content_estimate_and_ignores_roles():
    batch = [(msg("abcdefgh", "system-with-a-long-role-name"), msg("情感x")), (msg(""),), ()]
    # "abcdefgh": 2 + 4; "情感x": 2 wide + 1 // 4 = 2, + 4; "": 0 + 4; no message: 0
    assert TokenCounter("h").count(batch) == [12, 4, 0]


def test_template_counter_counts_the_rendered_chat_prompt_with_generation_prompt_and_specials():
    tok, tpl = Words(), Template()
    counter = TokenCounter("t", tok, tpl, {"bos_token": "<s>"})
    got = counter.count([(msg("a b", "system"), msg("c")), (msg("d e f"),)])
    assert got == [4, 4]  # "a b c GEN", "d e f GEN"
    assert tok.batches == [["a b c GEN", "d e f GEN"]]  # one batch for all requests
    assert [c["messages"] for c in tpl.calls] == [[msg("a b", "system"), msg("c")], [msg("d e f")]]
    assert all(type(c["messages"]) is list and c["add_generation_prompt"] is True and c["bos_token"] == "<s>"
               for c in tpl.calls)


def test_tokenizer_without_template_counts_each_message_content_plus_four():
    tok = Words()
    got = TokenCounter("c", tok).count([(msg("a b c"), msg("d")), (msg(""),), (msg("e f"),)])
    assert got == [3 + 4 + 1 + 4, 0 + 4, 2 + 4]
    assert tok.batches == [["a b c", "d", "", "e f"]]


# -- stand_in_answer ---------------------------------------------------------------------------------------------
def test_enum_answers_are_picked_by_the_seed_hash_and_stay_the_same_for_a_seed():
    options = ["joy", "anger", "fear", "sadness", "surprise", "disgust", "neutral"]
    seeds = [f"s{i}" for i in range(12)]
    got = [stand_in_answer({"enum": options, "type": "string"}, s) for s in seeds]
    assert got == [options[pick(7, s)] for s in seeds]
    assert len(set(got)) > 1
    assert stand_in_answer({"enum": tuple(options)}, "s3") == options[pick(7, "s3")]


def test_const_and_the_first_alternative_of_any_of_or_one_of():
    assert stand_in_answer({"const": "x", "type": "integer"}, "s") == "x"
    assert stand_in_answer({"anyOf": [{"type": "integer", "minimum": 3}, {"type": "string"}]}, "s") == 3
    assert stand_in_answer({"oneOf": [{"type": "boolean"}, {"type": "integer"}]}, "s") is False
    seeds = [f"q{i}" for i in range(8)]
    assert [stand_in_answer({"anyOf": [{"enum": list("abcde")}]}, s) for s in seeds] == \
        ["abcde"[pick(5, s)] for s in seeds]


def filler(n: int, seed: str) -> str:
    at = pick(len(FILLER), seed)
    return (FILLER * 4)[at:at + n]


def test_strings_are_a_quarter_of_their_bound_at_a_seed_picked_stretch_of_filler():
    assert len(FILLER) == 48
    for seed in ("a", "b", "c", "v7"):
        assert stand_in_answer({"type": "string"}, seed) == filler(4, seed)  # default bound 16
        assert stand_in_answer({"type": "string", "maxLength": 200}, seed) == filler(50, seed)
        assert stand_in_answer({"type": "string", "maxLength": 400}, seed) == filler(100, seed)  # past two fillers
        assert stand_in_answer({"type": "string", "maxLength": 7}, seed) == filler(1, seed)
        assert stand_in_answer({"type": "string", "maxLength": 2}, seed) == filler(1, seed)  # never empty
    assert len({stand_in_answer({"type": "string", "maxLength": 40}, f"s{i}") for i in range(10)}) > 5


def test_arrays_have_one_item_within_min_and_max_items_each_seeded_by_its_index():
    item = {"type": "string", "maxLength": 8}
    assert stand_in_answer({"type": "array", "items": item}, "r") == [filler(2, "r[0]")]
    assert stand_in_answer({"type": "array", "items": item, "minItems": 3}, "r") == \
        [filler(2, "r[0]"), filler(2, "r[1]"), filler(2, "r[2]")]
    assert stand_in_answer({"type": "array", "items": item, "minItems": 2, "maxItems": 5}, "r") == \
        [filler(2, "r[0]"), filler(2, "r[1]")]
    assert stand_in_answer({"type": "array", "items": item, "maxItems": 0}, "r") == []
    assert stand_in_answer({"type": "array", "items": item, "minItems": 1, "maxItems": 1}, "r") == [filler(2, "r[0]")]
    assert stand_in_answer({"type": "array"}, "r") == [None]  # no item schema


def test_objects_answer_every_property_seeded_by_its_key():
    schema = {"type": "object", "properties": {"cause": {"type": "string", "maxLength": 12},
                                               "emotion": {"enum": list("abcdefghij")},
                                               "turn": {"type": "integer", "minimum": 1, "maximum": 9}}}
    for seed in ("x", "v3"):
        assert stand_in_answer(schema, seed) == {"cause": filler(3, f"{seed}.cause"),
                                                 "emotion": "abcdefghij"[pick(10, f"{seed}.emotion")],
                                                 "turn": 1 + pick(9, f"{seed}.turn")}
    assert stand_in_answer({"type": "object"}, "x") == {}


def test_integers_are_picked_within_both_bounds_else_the_minimum_else_zero():
    seeds = [f"i{i}" for i in range(20)]
    got = [stand_in_answer({"type": "integer", "minimum": 3, "maximum": 6}, s) for s in seeds]
    assert got == [3 + pick(4, s) for s in seeds] and set(got) == {3, 4, 5, 6}
    assert stand_in_answer({"type": "integer", "minimum": 7, "maximum": 7}, "s") == 7
    assert stand_in_answer({"type": "integer", "minimum": 5}, "s") == 5
    assert stand_in_answer({"type": "integer", "maximum": 5}, "s") == 0
    assert stand_in_answer({"type": "integer"}, "s") == 0


def test_numbers_booleans_and_unknown_nodes():
    assert stand_in_answer({"type": "number", "minimum": 2}, "s") == 0.0
    assert stand_in_answer({"type": "boolean"}, "s") is False
    assert stand_in_answer({"type": "null"}, "s") is None
    assert stand_in_answer({}, "s") is None


# -- RecordingLLM ------------------------------------------------------------------------------------------------
def variant(content: str) -> int:
    return hashlib.blake2b(content.encode("utf-8"), digest_size=1).digest()[0] % 16


def test_recording_llm_counts_calls_prompt_tokens_max_tokens_and_live_requests():
    llm = RecordingLLM(TokenCounter("h"))
    assert (llm.name, llm.calls, llm.prompt_tokens, llm.generated_tokens, llm.live_calls,
            llm.live_prompt_tokens) == ("forecast", 0, 0, 0, 0, 0)
    first = [ChatRequest((msg("abcdefgh"),), {"type": "boolean"}, Sampling(max_tokens=30)),  # 2 + 4
             ChatRequest((msg("abcd"), msg("情感")), {"type": "boolean"}, Sampling(max_tokens=7), live=True)]  # 5 + 6
    out = asyncio.run(llm.generate(first))
    assert [c.prompt_tokens for c in out] == [6, 11]
    assert (llm.calls, llm.prompt_tokens, llm.generated_tokens, llm.live_calls, llm.live_prompt_tokens) == \
        (2, 17, 37, 1, 11)
    second = [ChatRequest((msg("abcdefghijkl"),), {"type": "boolean"}, Sampling(max_tokens=None), live=True),  # 3+4
              ChatRequest((msg(""),), {"type": "boolean"}, Sampling(max_tokens=5))]
    asyncio.run(llm.generate(second))
    assert (llm.calls, llm.prompt_tokens, llm.generated_tokens, llm.live_calls, llm.live_prompt_tokens) == \
        (4, 28, 42, 2, 18)
    assert type(llm.generated_tokens) is int


def test_recording_llm_answers_schema_valid_json_picked_by_the_last_message():
    options = [f"情{i}" for i in range(16)]
    contents = [f"prompt {i}" for i in range(10)]
    reqs = [ChatRequest((msg("same system", "system"), msg(c)), {"enum": options}) for c in contents]
    out = asyncio.run(RecordingLLM(TokenCounter("h")).generate(reqs))
    expected = [options[pick(16, f"v{variant(c)}")] for c in contents]
    assert [c.parsed for c in out] == expected
    assert [c.text for c in out] == [f'"{e}"' for e in expected]  # not ASCII-escaped
    assert all(c.ok for c in out)


def test_recording_llm_object_answers_list_keys_sorted_and_a_schemaless_request_gets_a_short_string():
    schema = {"type": "object", "properties": {"b": {"type": "boolean"}, "a": {"const": 1}}}
    out = asyncio.run(RecordingLLM(TokenCounter("h")).generate([ChatRequest((msg("p"),), schema),
                                                                ChatRequest((msg("q"),))]))
    assert out[0].text == '{"a": 1, "b": false}' and out[0].parsed == {"a": 1, "b": False}
    assert out[1].parsed == filler(4, f"v{variant('q')}") and out[1].text == json.dumps(out[1].parsed)


# -- StandInEmbedder ---------------------------------------------------------------------------------------------
def test_stand_in_embedder_gives_each_text_its_own_unit_vector():
    emb = StandInEmbedder()
    assert (emb.name, emb.dim) == ("forecast-stand-in", 64)
    m = asyncio.run(emb.embed(["alpha", "情感", "alpha"]))
    assert m.shape == (3, 64) and m.dtype == np.float32
    raw = np.frombuffer(hashlib.blake2b("情感".encode("utf-8"), digest_size=64).digest(), dtype=np.uint8)
    v = raw.astype(np.float64) - 127.5
    np.testing.assert_allclose(m[1], v / np.linalg.norm(v), rtol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(m, axis=1), 1.0, rtol=1e-5)
    assert np.array_equal(m[0], m[2]) and not np.allclose(m[0], m[1])
    assert asyncio.run(emb.embed([])).shape == (0, 64)


# -- forecast() --------------------------------------------------------------------------------------------------
class StandInSolver:
    def __init__(self) -> None:
        self.seen: dict[str, Any] = {}

    def dry_solve(self, samples, options, llm, embedder, *, prior=False):
        self.seen.update(samples=samples, options=options, llm=llm, embedder=embedder, prior=prior)
        reqs = [ChatRequest((msg("x" * 4 * len(s)),), {"type": "boolean"}, Sampling(max_tokens=10 * len(s)),
                            live=s == "live") for s in samples]
        asyncio.run(llm.generate(reqs))


@pytest.mark.parametrize("prior", [False, True])
def test_forecast_sums_the_dry_solve_requests(prior):
    task = SimpleNamespace(solver=StandInSolver())
    counter = TokenCounter("the counter's name")
    kw = {"prior": True} if prior else {}
    got = fc.forecast(task, ["ab", "live", "c"], {"o": 1}, counter, **kw)
    # prompts of 8, 16, 4 characters: 2 + 4, 4 + 4, 1 + 4 tokens; max_tokens 20 + 40 + 10
    assert got == (3, 19, 70, 1, 8)  # calls, prompt, generated; live calls and their prompt tokens
    seen = task.solver.seen
    assert seen["samples"] == ["ab", "live", "c"] and seen["options"] == {"o": 1} and seen["prior"] is prior
    assert isinstance(seen["llm"], RecordingLLM) and seen["llm"].counter is counter
    assert isinstance(seen["embedder"], StandInEmbedder)


# -- which counter a model gets ----------------------------------------------------------------------------------
def words_tokenizer_json(folder: Path) -> None:
    from tokenizers import Tokenizer, models, pre_tokenizers

    tok = Tokenizer(models.WordLevel({"[UNK]": 0}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    folder.mkdir(parents=True, exist_ok=True)
    tok.save(str(folder / "tokenizer.json"))


WORDS_TEMPLATE = "{% for m in messages %}{{ bos_token }} {{ m['content'] }} {% endfor %}{{ eos_token }}"


def model_folder(folder: Path, config: dict[str, Any] | None = None, jinja: str | None = None) -> Path:
    words_tokenizer_json(folder)
    if config is not None:
        (folder / "tokenizer_config.json").write_text(json.dumps(config, ensure_ascii=False), encoding="utf-8")
    if jinja is not None:
        (folder / "chat_template.jinja").write_text(jinja, encoding="utf-8")
    return folder


def render(counter: TokenCounter, *contents: str) -> str:
    return counter.template.render(messages=[msg(c) for c in contents], add_generation_prompt=True,
                                   **counter.specials)


def test_a_folder_s_config_template_and_its_special_tokens_are_used(tmp_path):
    folder = model_folder(tmp_path / "m", {
        "chat_template": WORDS_TEMPLATE, "bos_token": {"content": "B1 B2", "lstrip": False}, "eos_token": "E",
        "pad_token": None, "unk_token": {"special": True}, "add_bos_token": True, "model_max_length": 9,
        "padding_side": "left"})
    (folder / "chat_template.jinja").write_text("JINJA {{ eos_token }}", encoding="utf-8")  # the config's wins
    counter = _folder_counter("my-model", folder)
    assert counter.name == "tokenizer of my-model, with its chat template"
    assert counter.specials == {"bos_token": "B1 B2", "eos_token": "E"}
    assert render(counter, "x y", "z") == "B1 B2 x y B1 B2 z E"
    assert counter.count([(msg("x y"), msg("z")), (msg("a b c"),)]) == [8, 6]


def test_a_folder_s_named_templates_give_the_default_one(tmp_path):
    named = [{"name": "tool_use", "template": "TOOLS"}, {"name": "default", "template": "DEFAULT {{ eos_token }}"}]
    counter = _folder_counter("n", model_folder(tmp_path / "m", {"chat_template": named, "eos_token": "E"}))
    assert counter.name == "tokenizer of n, with its chat template" and render(counter, "a") == "DEFAULT E"


def test_without_a_default_named_template_the_jinja_file_or_the_contents_are_counted(tmp_path):
    no_default = {"chat_template": [{"name": "tool_use", "template": "TOOLS"}]}
    counter = _folder_counter("n", model_folder(tmp_path / "a", no_default, jinja="J {{ messages[0]['content'] }}"))
    assert counter.name == "tokenizer of n, with its chat template" and render(counter, "a b") == "J a b"
    counter = _folder_counter("n", model_folder(tmp_path / "b", no_default))
    assert counter.name == "tokenizer of n, message contents (no chat template)" and counter.template is None
    assert counter.count([(msg("a b"), msg("c"))]) == [2 + 4 + 1 + 4]


def test_a_folder_without_config_uses_its_jinja_file_with_no_special_tokens(tmp_path):
    counter = _folder_counter("n", model_folder(tmp_path / "m", None, jinja="情 {{ messages[0]['content'] }}"))
    assert counter.name == "tokenizer of n, with its chat template" and counter.specials == {}
    assert render(counter, "a") == "情 a"
    counter = _folder_counter("n", model_folder(tmp_path / "e", {"chat_template": ""}))
    assert counter.template is None and counter.name.endswith("message contents (no chat template)")


def test_a_folder_s_files_are_read_as_utf8_whatever_the_locale(tmp_path, monkeypatch):
    import io

    folder = model_folder(tmp_path / "m", {"chat_template": "情 {{ bos_token }}", "bos_token": "感"})
    other = model_folder(tmp_path / "j", None, jinja="事件 {{ messages[0]['content'] }}")
    # a Latin-1 locale: what Path.read_text decodes with when it is given no encoding
    monkeypatch.setattr(io, "text_encoding", lambda encoding, *a: encoding or "latin-1")
    assert render(_folder_counter("n", folder), "a") == "情 感"
    assert render(_folder_counter("n", other), "a") == "事件 a"


def test_chat_templates_render_as_transformers_renders_them():
    tpl = ("{% for m in messages %}\n"
           "    {% if loop.index > 2 %}{% break %}{% endif %}\n"
           "[{{ m['content'] }}]\n"
           "{% endfor %}\n"
           "{% if add_generation_prompt %}GEN{% endif %}")
    counter = _local_counter("w", Words(), tpl, {"k_token": "K"})
    assert counter.name == "tokenizer of w, with its chat template"
    assert counter.specials == {"k_token": "K"} and isinstance(counter.tokenizer, Words)
    assert counter.template.render(messages=[msg("a"), msg("b"), msg("c")], add_generation_prompt=True) == \
        "[a]\n[b]\nGEN"
    failing = _local_counter("w", Words(), "{{ raise_exception('no system role') }}", {})
    with pytest.raises(jinja2.TemplateError, match="^no system role$"):
        failing.template.render(messages=[])
    mutating = _local_counter("w", Words(), "{{ messages.append(1) }}", {})
    with pytest.raises(jinja2.exceptions.SecurityError):
        mutating.template.render(messages=[])


def test_no_chat_template_counts_message_contents():
    tok = Words()
    for template in (None, ""):
        counter = _local_counter("w", tok, template, {"eos_token": "E"})
        assert (counter.name, counter.tokenizer, counter.template) == \
            ("tokenizer of w, message contents (no chat template)", tok, None)


def test_smoke_gets_its_own_tokenizer_and_chat_template(monkeypatch):
    tok = Words()
    monkeypatch.setattr(fc, "_smoke_tokenizer", lambda: tok)
    counter = counter_for(parse_llm_spec("smoke"))
    assert counter.name == "tokenizer of smoke (built locally), with its chat template"
    assert counter.tokenizer is tok and counter.specials == {"eos_token": "<|im_end|>"}
    assert render(counter, "hi") == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    assert "<|im_start|>" in CHAT_TEMPLATE


def test_a_smoke_tokenizer_that_does_not_load_leaves_the_heuristic_said_so(monkeypatch):
    def broken():
        raise RuntimeError("no sample text")

    monkeypatch.setattr(fc, "_smoke_tokenizer", broken)
    counter = counter_for(parse_llm_spec("smoke?max_model_len=512"))
    assert counter.name == f"{HEURISTIC} (the tokenizer of smoke did not load: RuntimeError)"
    assert counter.tokenizer is None and counter.template is None


def test_a_vllm_model_folder_on_this_machine_gets_its_tokenizer(tmp_path, monkeypatch):
    folder = model_folder(tmp_path / "models" / "tiny", {"chat_template": WORDS_TEMPLATE, "bos_token": "B"})
    monkeypatch.setattr(hub, "cached_path", lambda name: pytest.fail("a local folder is not looked up in the hub"))
    counter = counter_for(parse_llm_spec(f"vllm:{folder}?max_model_len=64"))
    assert counter.name == f"tokenizer of {folder}, with its chat template"
    assert counter.count([(msg("a b"),)]) == [3]  # "B a b "
    monkeypatch.setenv("HOME", str(tmp_path))
    counter = counter_for(parse_llm_spec("vllm:~/models/tiny"))
    assert counter.name == "tokenizer of ~/models/tiny, with its chat template"


def test_a_hub_model_is_counted_by_its_cached_tokenizer_else_by_the_heuristic(tmp_path, monkeypatch):
    folder = model_folder(tmp_path / "snap", {"chat_template": WORDS_TEMPLATE})
    asked = []
    monkeypatch.setattr(hub, "cached_path", lambda name: asked.append(name) or folder)
    counter = counter_for(parse_llm_spec("vllm:org/model-7b"))
    assert counter.name == "tokenizer of org/model-7b, with its chat template" and asked == ["org/model-7b"]
    monkeypatch.setattr(hub, "cached_path", lambda name: None)
    counter = counter_for(parse_llm_spec("vllm:org/model-7b"))
    assert counter.name == f"{HEURISTIC} (org/model-7b is not in the local hub cache)" and counter.tokenizer is None


def test_a_missing_path_that_is_no_hub_name_is_not_looked_up(tmp_path, monkeypatch):
    monkeypatch.setattr(hub, "cached_path", lambda name: pytest.fail("looked up"))
    missing = tmp_path / "no" / "such"
    counter = counter_for(parse_llm_spec(f"vllm:{missing}"))
    assert counter.name == f"{HEURISTIC} ({missing} is not in the local hub cache)"


def test_a_folder_without_a_tokenizer_leaves_the_heuristic_naming_the_model(tmp_path):
    (tmp_path / "m").mkdir()
    counter = counter_for(parse_llm_spec(f"vllm:{tmp_path / 'm'}?max_model_len=64"))
    assert counter.name == f"{HEURISTIC} (the tokenizer of vllm:{tmp_path / 'm'} did not load: Exception)"
    assert counter.tokenizer is None


def test_endpoints_and_no_model_get_the_heuristic():
    counter = counter_for(parse_llm_spec("openai:gpt-4o@https://api.example.com/v1"))
    assert counter.name == f"{HEURISTIC} (an endpoint's tokenizer is not on this machine)" and counter.tokenizer is None
    counter = counter_for(None)
    assert (counter.name, counter.tokenizer, counter.template, counter.specials) == (HEURISTIC, None, None, {})
