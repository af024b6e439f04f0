"""Every prompt of the AER task, as templates in one place, and the version hash recorded with each run.

Prompt modes: `zero-shot`, `few-shot` (solved examples from another split, never the question's own topic) and `cot`
(a bounded reasoning string, then the answer). Context modes: `none`, `full` (the topic's documents, trimmed by the
rule in context.py) and `retrieve` (the top-k passages). Layout, for vLLM's prefix cache: the system text, then the
topic's documents, then the topic's examples -- all shared by every question of a topic -- and the question last.

The answer is asked for as JSON ({"answer": [...]}, with "reasoning" first under cot); backends with structured
output get the schema too, the others rely on the instruction text (and the solver's strict text parsing).
"""

from __future__ import annotations

import hashlib
import json
from string import Template
from typing import Any

PROMPT_MODES = ("zero-shot", "few-shot", "cot")  # AerOptions.prompt
REASONING_MAX_CHARS = 600  # the cot reasoning string's bound (maxLength in the schema)

SYSTEM = (
    "You analyse real-world news events. Each question gives an observed event and four candidate events labelled "
    "A to D. Pick every candidate that is a direct cause of the observed event: something that happened before it "
    "and brought it about, not merely a related fact, a later consequence or a distant background condition. At "
    "least one candidate is correct and several may be. A candidate saying that none of the others is a correct "
    "cause is right only when no other candidate is. Candidates with identical text are either all right or all "
    "wrong."
)

# How context.py lays out one document / one retrieved passage, and marks a document cut by the trim rule.
DOCUMENT_ITEM = Template("[Document $index] $title\n$body")
PASSAGE_ITEM = Template("[Passage $rank, document $doc: $title]\n$text")
CUT_MARK = " [... cut]"
TRIM_RULE = ("documents in published order; keep whole documents while they fit the budget (context - answer budget "
             "- largest rest of prompt in the topic - 5% margin); cut the first that does not fit at the last "
             "approximate token that fits (marked [... cut]); leave out the rest")

DOCUMENTS = Template('Documents about the topic "$topic":\n\n$documents\n\n')
PASSAGES = Template('Passages from the documents about the topic "$topic", most relevant first:\n\n$passages\n\n')
NO_DOCUMENTS = ""

EXAMPLES_HEAD = "Solved examples from other topics:\n\n"
EXAMPLE = Template("Observed event: $event\n$options\nAnswer: $answer\n\n")

QUESTION = Template("Observed event: $event\n$options\n\n$instruction")
OPTION_LINE = Template("$letter. $text")

ANSWER_INSTRUCTION = (
    'Reply with a JSON object only, of the form {"answer": ["B"]}: the list holds the letter of every candidate that '
    'is a direct cause, e.g. ["A", "C"].'
)
COT_INSTRUCTION = Template(
    'First reason briefly about which candidates directly caused the event (at most $limit characters), then answer. '
    'Reply with a JSON object only, of the form {"reasoning": "...", "answer": ["B"]}: the list holds the letter of '
    'every candidate that is a direct cause, e.g. ["A", "C"].'
)

_TEMPLATES = (SYSTEM, DOCUMENTS.template, PASSAGES.template, EXAMPLES_HEAD, EXAMPLE.template, QUESTION.template,
              OPTION_LINE.template, ANSWER_INSTRUCTION, COT_INSTRUCTION.template, str(REASONING_MAX_CHARS), TRIM_RULE,
              DOCUMENT_ITEM.template, PASSAGE_ITEM.template, CUT_MARK)
PROMPTS_VERSION = hashlib.sha256("\x00".join(_TEMPLATES).encode("utf-8")).hexdigest()[:12]


def options_block(options: dict[str, str]) -> str:
    return "\n".join(OPTION_LINE.substitute(letter=k, text=options[k]) for k in sorted(options))


def instruction(prompt: str) -> str:
    return COT_INSTRUCTION.substitute(limit=REASONING_MAX_CHARS) if prompt == "cot" else ANSWER_INSTRUCTION


def answer_json(letters: list[str]) -> str:
    return json.dumps({"answer": sorted(letters)})


def examples_block(shots: list[dict[str, Any]]) -> str:
    if not shots:
        return ""
    body = "".join(EXAMPLE.substitute(event=s["target_event"], options=options_block(s["options"]),
                                      answer=answer_json(s["answer"])) for s in shots)
    return EXAMPLES_HEAD + body


def context_block(context: str, topic: str | None, kind: str) -> str:
    """The documents (full) or passages (retrieve) block; nothing for `none` or an empty context."""
    if kind == "none" or not context:
        return NO_DOCUMENTS
    tmpl = PASSAGES if kind == "retrieve" else DOCUMENTS
    key = "passages" if kind == "retrieve" else "documents"
    return tmpl.substitute(topic=topic or "", **{key: context})


def question_block(target_event: str, options: dict[str, str], prompt: str) -> str:
    return QUESTION.substitute(event=target_event, options=options_block(options), instruction=instruction(prompt))


def user_message(*, context: str, topic: str | None, context_kind: str, shots: list[dict[str, Any]],
                 target_event: str, options: dict[str, str], prompt: str) -> str:
    """Documents first, then examples, then the question (shared prefix first)."""
    return (context_block(context, topic, context_kind) + examples_block(shots)
            + question_block(target_event, options, prompt))


def rest_of_prompt(*, topic: str | None, context_kind: str, shots: list[dict[str, Any]], target_event: str,
                   options: dict[str, str], prompt: str) -> str:
    """Everything but the documents (for the trim rule's budget): the system text and the user message with a
    one-token stand-in for the documents or passages (the block's frame counts, its body is what the budget sizes)."""
    return SYSTEM + "\n" + user_message(context="x", topic=topic, context_kind=context_kind, shots=shots,
                                        target_event=target_event, options=options, prompt=prompt)
