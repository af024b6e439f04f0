"""Every prompt of the extraction methods, as templates in one place, and the version string recorded with each run.

Templates use `string.Template` ($name) so that JSON braces in the text need no escaping. The structure each answer
must have is given to the model as a JSON schema (structured output), so the templates describe meaning, not syntax.
Ordering matters for vLLM's prefix cache: whatever many requests share (system text, event context, the window's
history) comes first; the part that differs per request (the utterance asked about) comes last.
"""

from __future__ import annotations

import hashlib
from string import Template

SYSTEM = "你是一名对话情感分析专家。请严格按照给定的JSON结构作答，不要输出任何多余内容。"

_SEXTUPLE_GUIDE = (
    "情感五元组的字段：target（评价对象，通常是上一句话或对方的某个说法、行为，也可以是对话中点名的人或事物）、"
    "aspect（针对对象的哪一方面）、opinion（说话人的观点）、sentiment（情感倾向，只能是 positive、negative、neutral、"
    "ambiguous、doubt 之一）、rationale（产生该情感的原因）。一句话可以有多个五元组；如果这句话没有表达任何观点或情感，"
    "返回空列表。"
)

# direct: the whole history up to (and including) the utterance, in one call per utterance.
DIRECT_SEXTUPLE = Template(
    "下面是一段对话从开头到当前句的全部内容，每行格式为「[编号] 说话人：内容」。\n$history\n\n"
    + _SEXTUPLE_GUIDE
    + "\n请为当前句（编号 $index，说话人 $holder）抽取情感五元组：$sentence"
)

# rag: the retrieved related earlier utterances, then the recent window, then the utterance.
RAG_SEXTUPLE = Template(
    "与当前句语义相关的较早对话（按相似度检索）：\n$retrieved\n\n最近的对话：\n$history\n\n"
    + _SEXTUPLE_GUIDE
    + "\n请为当前句（编号 $index，说话人 $holder）抽取情感五元组：$sentence"
)

# window, pass 1: update the event bucket with the window's new utterances and resolve their targets.
WINDOW_PASS1 = Template(
    "事件桶记录了对话到目前为止的各个事件（编号、名称、参与者、按句记录的事件日志）：\n$bucket\n\n"
    "对话片段：\n$window\n\n"
    "请按顺序为编号 $new_ids 的每一句给出：event_id（若这句话属于事件桶中的某个已有事件，填该事件编号；"
    "若是新事件，填 -1）、event（事件名称，简短）、target（这句话针对的对象：通常是上一句话或另一位说话人的话，"
    "或句中明确提到的人或事物）、log（这句话给该事件新增的一条记录，是日志而不是总结）。"
)

# window, pass 2: the shared event context first, then the window's history, then the utterance with its event/target.
WINDOW_PASS2 = Template(
    "事件背景：\n$events\n\n对话：\n$history\n\n"
    + _SEXTUPLE_GUIDE
    + "\n当前句（编号 $index，说话人 $holder；所属事件：$event；评价对象：$target）：$sentence\n请抽取这句话的情感五元组。"
)

_STATE_GUIDE = (
    "state（情绪状态）只能是 positive、negative、neutral、ambiguous、doubt 之一；reason 是情绪产生或变化的原因；"
    "source_id 是引起这一情绪的说话人编号（可以是自己）。"
)

# emotion chains, direct: the whole dialogue, one call per holder (the dialogue first: the holders share that prefix).
CHAIN_DIRECT = Template(
    "下面是一段完整的对话，每行格式为「[编号] 说话人：内容」。对话中的说话人有：$holders。\n$dialogue\n\n"
    + _STATE_GUIDE
    + "\n请为说话人 $holder 提取情感事件链：该说话人参与的主要事件，以及每个事件中按时间顺序的情绪变化。"
)

# emotion chains, window: known events and the chains so far first, then the window annotated with its sextuples.
CHAIN_WINDOW = Template(
    "已知事件：\n$events\n\n各说话人目前的情感链（每个事件只列最近几条）：\n$chains\n\n"
    "对话片段（每句附有事件和情感五元组）：\n$window\n\n"
    "请只根据编号 $new_ids 的句子，按时间顺序列出其中体现的情绪变化，每条注明说话人 holder 和所属事件 event。"
    + _STATE_GUIDE
)

# emotion chains, merge: one run of consecutive identical states of one holder in one event.
CHAIN_MERGE = Template(
    "说话人 $holder 在事件「$event」中连续出现了相同的情绪状态 $state，各自的原因如下：\n$reasons\n\n"
    "请把这些原因合并为一条简洁的原因（reason），保留关键信息。"
)

# Shown where a window has no event yet / an utterance has no assignment.
NO_EVENTS = "（暂无）"
UNKNOWN = "未知"

# The system text and every template above, by its name in lower case: a template added here is versioned with them.
TEMPLATES: dict[str, str] = {"system": SYSTEM, **{name.lower(): value.template for name, value in list(globals().items())
                                                  if isinstance(value, Template)}}

# Recorded in every run manifest: a change to any template changes it (and, through the messages, the cache keys).
PROMPTS_VERSION = "v1-" + hashlib.sha256("\x00".join(f"{k}={v}" for k, v in sorted(TEMPLATES.items())).encode()).hexdigest()[:12]


def line(index: int, holder: str, sentence: str) -> str:
    """One utterance as shown to the model; ids are 0-based positions, the same ids the answers refer to."""
    return f"[{index}] {holder}：{sentence}"
