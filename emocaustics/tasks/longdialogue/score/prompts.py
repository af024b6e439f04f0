"""Prompt templates of the scoring judge (Chinese, like the data), and the answer format it must follow.

The judge decides whether a ground-truth event and a predicted event describe the same event. The answer is a JSON
object `{"same": 0|1}`; backends with structured output are constrained by `JUDGE_SCHEMA`, the others are asked in
words and parsed (an answer that is not 0/1 is retried once, then counted as a judge failure).
"""

from __future__ import annotations

JUDGE_SCHEMA: dict = {
    "type": "object",
    "properties": {"same": {"type": "integer", "enum": [0, 1]}},
    "required": ["same"],
    "additionalProperties": False,
}

JUDGE_SYSTEM = (
    "你是情感事件评测器。给你两段文本：A 是标注的事件，B 是模型预测的事件。"
    "请判断它们是否在描述同一个事件（参与者、起因和所指的事情基本一致即可，措辞可以不同）。"
    '只输出一个 JSON 对象：相同输出 {"same": 1}，不同输出 {"same": 0}，不要输出任何解释。'
)

JUDGE_USER = "事件A：{gt}\n事件B：{pred}\n它们是同一个事件吗？"

# the retry repeats the question with a reminder of the format, since the first answer did not follow it
JUDGE_RETRY_NOTE = '\n注意：只能输出 {"same": 0} 或 {"same": 1}。'


def judge_messages(gt: str, pred: str, retry: bool = False) -> tuple[dict[str, str], ...]:
    user = JUDGE_USER.format(gt=gt, pred=pred) + (JUDGE_RETRY_NOTE if retry else "")
    return ({"role": "system", "content": JUDGE_SYSTEM}, {"role": "user", "content": user})


# --- `--compat reference`: the published scripts' own judge (prompt text and answer format), as data -------------
# The reference asks in words, without a schema, at temperature 0, and reads the answer as `int(answer.strip())`:
# 1 is "similar", any other integer is 0, and anything that is not an integer is an error (see `judge.REFERENCE_JUDGE`).
# Sextuples (get_quadruples_score.py) and chains (get_emo_score.py) use different system prompts, the same user turn.

REFERENCE_SEXTUPLE_SYSTEM = (
    "\n你是一个负责对比两个文本的评测器，我会给你两个文本A和B，你需要判断它们语义是否相似，或者在描述一个相似的态度和事件。\n"
    "如果语义基本一致或高度近似(意思相或者目标相同)，请输出1，否则输出0。只需要输出一个数字0或1，不要输出其他解释。\n"
)

REFERENCE_CHAIN_SYSTEM = (
    "\n你是一个负责对比两个文本的评测器。\n"
    "我会给你两个文本A和B，你需要判断它们语义是否相似，或者在描述一个相似的态度和事件。\n"
    "如果语义基本一致或高度近似(意思相或者目标相同)，请输出1，否则输出0。只需要输出一个数字0或1，不要输出其他解释。\n"
    "\n### 注意\n"
    "- 输出只有一个数字，没有其他内容。\n"
    "- 如果两个句子相似，则输出数字 1，否则输出数字 0。\n"
    "\n### 输入示例\n"
    "\n文本A: 我爱吃苹果 \n"
    "文本B: 我觉得苹果很好吃\n"
    "请判断是否相似(0或1):\n"
    "\n### 输出示例\n"
    "\n1\n\n"
)

REFERENCE_USER = "文本A: {a}\n文本B: {b}\n请判断是否相似(0或1):"


def reference_judge_messages(task: str, a: str, b: str) -> tuple[dict[str, str], ...]:
    """The reference's two messages for texts `a` (ground truth) and `b` (prediction), already formatted as text."""
    system = REFERENCE_SEXTUPLE_SYSTEM if task == "sextuple" else REFERENCE_CHAIN_SYSTEM
    return ({"role": "system", "content": system}, {"role": "user", "content": REFERENCE_USER.format(a=a, b=b)})
