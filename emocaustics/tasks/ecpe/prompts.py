"""Every prompt of the ECPE solver methods, as templates in one place, and the version recorded with each run.

Templates use `string.Template` ($name). The answer's structure is given to the model as a JSON schema (structured
output), so the templates describe meaning, not syntax. What many requests share goes first, for vLLM's prefix
cache: the system text (task definition) is the same for every request; the `utterance` method's requests of one
conversation then share the growing history, and only the question about one utterance comes last.
Only utterance numbers, speakers and texts ever reach a prompt: never an emotion label or a gold pair.
"""

from __future__ import annotations

import hashlib
from string import Template

SYSTEM = (
    "You annotate emotions and what causes them in English conversations from a TV series.\n"
    "Emotion categories: anger, disgust, fear, joy, sadness, surprise. An utterance that expresses none of them is "
    "neutral, and a neutral utterance has no cause.\n"
    "The cause of an emotion is the event, situation, opinion or experience that triggers it. It is stated in words "
    "somewhere in the conversation: in the emotional utterance itself or in another utterance, usually an earlier "
    "one. An emotion may have several causes, in different utterances.\n"
    "Give each cause as the number of the utterance that states it and a span copied word for word from that "
    "utterance: a contiguous run of its words, no longer than needed to state the cause.\n"
    "Answer with JSON that follows the given schema, and nothing else."
)

# direct: the whole conversation, one call.
DIRECT = Template(
    "Conversation (one utterance per line: [number] speaker: text):\n$conversation\n\n"
    "Find every emotion-cause pair in this conversation. For each utterance that expresses one of the six emotions, "
    "give its number and its emotion, and for each of its causes the number of the cause utterance and the cause "
    "span. List nothing for neutral utterances."
)

# utterance: the history up to and including the utterance, one call per utterance.
UTTERANCE = Template(
    "Conversation so far (one utterance per line: [number] speaker: text):\n$history\n\n"
    "Look at utterance [$index] by $speaker: $text\n"
    "Which emotion does it express (neutral if none)? If it expresses an emotion, list its causes; each cause is in "
    "utterance $index itself or in an earlier one (numbers 1 to $index), given by that utterance's number and a span "
    "copied word for word from it."
)

TEMPLATES: dict[str, str] = {"system": SYSTEM, "direct": DIRECT.template, "utterance": UTTERANCE.template}

# Recorded in every run manifest: a change to any template changes it (and, through the messages, the cache keys).
PROMPTS_VERSION = "ecpe-v1-" + hashlib.sha256(
    "\x00".join(f"{k}={v}" for k, v in sorted(TEMPLATES.items())).encode()).hexdigest()[:12]


def line(number: int, speaker: str, text: str) -> str:
    """One utterance as shown to the model; numbers are the official 1-based utterance ids."""
    return f"[{number}] {speaker}: {text}"
