"""Issue 41, point 12: every model the README, the docs and the shipped jobs name on a provider's own priced API
(OpenAI's, Anthropic's) has a price in the shipped table, so its cost is never "unknown" and `max_cost_usd` accepts
it. A model on another server (`openai:M@https://api.deepseek.com/v1`, a local `vllm serve`) is priced by the job's
`price:`; placeholders (`openai:MODEL`, `anthropic:M`) name no model."""

from __future__ import annotations

import re
from pathlib import Path

from emocaustics.models.prices import listed, table

REPO = Path(__file__).resolve().parents[2]
PROVIDER_HOSTS = {"openai": "api.openai.com", "anthropic": "api.anthropic.com"}
SPEC = re.compile(r"\b(openai|anthropic):([A-Za-z0-9][A-Za-z0-9._:-]*?)"
                  r"(?:@(https?://[^\s`'\")?]+)|(?=[^A-Za-z0-9._:-]|$))")


def _named() -> dict[tuple[str, str], list[str]]:
    files = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md")), *sorted((REPO / "jobs").glob("*.yaml"))]
    found: dict[tuple[str, str], list[str]] = {}
    for path in files:
        for kind, name, url in SPEC.findall(path.read_text(encoding="utf-8")):
            name = name.rstrip(":")  # `openai:gpt-4o-mini:` in a sentence
            if name.isupper() or len(name) == 1:  # a placeholder
                continue
            if url and PROVIDER_HOSTS[kind] not in url:  # another server: the job's `price:` prices it
                continue
            found.setdefault((kind, name), []).append(str(path.relative_to(REPO)))
    return found


def test_every_model_named_on_a_priced_provider_has_a_price():
    named = _named()
    assert ("anthropic", "claude-sonnet-4-5") in named and ("openai", "gpt-4o-mini") in named
    unpriced = {f"{k}:{n}": where[:3] for (k, n), where in named.items() if listed(n) is None}
    assert not unpriced, f"named in the docs/jobs but not in emocaustics/models/prices.json: {unpriced}"


def test_a_model_added_after_the_tables_date_says_when_and_from_where():
    added = table().get("added", {})
    for name, note in added.items():
        assert name in table()["models"], name
        assert re.match(r"\d{4}-\d{2}-\d{2}, from \S+", note), note  # the date its price was read, and the source
