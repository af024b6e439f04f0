"""Every prompt of the narrative annotator, as templates in one place, and their version hash.

Templates use `string.Template` ($name) so JSON braces need no escaping. The answer's structure goes to the model as a
JSON schema (structured output, taxonomies as enums), so the text explains meaning, not syntax. Order serves vLLM's
prefix cache: the system message (instructions and the taxonomy, identical for every story of a run) comes first; the
story's running state (characters and events so far) next; the window's sentences last.
"""

from __future__ import annotations

import hashlib
from string import Template

SYSTEM = Template(
    "You are an annotator of narrative texts (Chinese or English). You read a story window by window and record its "
    "characters and narrative events in a fixed JSON structure. Answer with JSON only.\n\n"
    "A narrative event is something that happens in the story: one action or exchange, told in one or a few "
    "consecutive sentences. For each event give:\n"
    "- first_sentence, last_sentence: the numbers of the first and last sentence that tell it;\n"
    "- continues: the id of an earlier event that this one simply continues across the window edge, else empty;\n"
    "- agents: the characters who act; targets: the characters acted upon (names as the story uses them);\n"
    "- relationships: for pairs of characters involved, the agent, the target, relationship_level1 and "
    "relationship_level2 (the kind of bond between them), and the sentiment labels the agent shows the target;\n"
    "- action_layer: category and type of the action, context (where it happens), status (how far it got) and "
    "function (its role in the plot).\n"
    "Characters: the people (or personified beings) of the story, with the other names the text uses for them "
    "(aliases) and an archetype.\n\n"
    "Labels come from these lists:\n"
    "relationship_level1 -> relationship_level2: $relationships\n"
    "sentiment labels: $sentiments\n"
    "action category -> types: $categories\n"
    "contexts: $contexts\nstatuses: $statuses\nfunctions: $functions\n"
    "archetypes: $archetypes"
)

WINDOW = Template(
    "Story: $title\n"
    "Characters found so far: $characters\n"
    "Events annotated so far (id: sentences; agents; action type): $events\n\n"
    "Sentences $first to $last of $total (numbered by their position in the whole story):\n$window\n\n"
    "Annotate the events told in sentences $first to $last (at most $max_events; sentence numbers must lie in "
    "$first..$last), and list the characters who appear in these sentences."
)

PROMPTS_VERSION = hashlib.sha256("\x00".join(t.template for t in (SYSTEM, WINDOW)).encode("utf-8")).hexdigest()[:12]
