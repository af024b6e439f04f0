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
