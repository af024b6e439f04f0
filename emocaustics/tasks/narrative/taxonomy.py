"""Label taxonomies: relationship (level1 -> level2), sentiment (label -> polarity), action (category -> types,
contexts, statuses, functions) and character archetypes.

They are data: the defaults we wrote ship in `taxonomies/*.json` next to this module; a user replaces any of them by
pointing at a folder holding files of the same names (`relationship.json`, `sentiment.json`, `action.json`,
`archetype.json`; a file absent there keeps the default). Labels are compared after `norm` (case, width,
whitespace). A label outside the taxonomy is reported per file and field (`check_story`) and is still compared as a
string -- the taxonomy never changes a score, except that sentiment polarity needs it (an unknown label has polarity
"unknown", which equals nothing).
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from emocaustics.core.errors import DataError
from emocaustics.tasks.narrative.gtmissing import norm
from emocaustics.tasks.narrative.schema import Issue, Story

DEFAULT_DIR = Path(__file__).resolve().parent / "taxonomies"
POLARITIES = ("positive", "negative", "neutral")
FILES = ("relationship", "sentiment", "action", "archetype")


@dataclass(frozen=True)
class Taxonomy:
    relationships: dict[str, tuple[str, ...]]  # level1 -> level2 labels
    sentiments: dict[str, str]  # label -> polarity
    categories: dict[str, dict[str, tuple[str, ...]]]  # category -> {"types","contexts","statuses","functions"}
    archetypes: tuple[str, ...]
    source: str = "default"

    # -- lookups (normalised) ------------------------------------------------------------------------------------
    def polarity(self, label: str) -> str:
        """positive | negative | neutral | unknown (a polarity word is its own polarity)."""
        key = norm(label)
        if key in POLARITIES:
            return key
        return self._polarity_of.get(key, "unknown")

    @functools.cached_property
    def _polarity_of(self) -> dict[str, str]:
        return {norm(k): v for k, v in self.sentiments.items()}  # by normalised label, built once per taxonomy

    def level2s(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(v for vs in self.relationships.values() for v in vs))

    def action_values(self, field: str) -> tuple[str, ...]:
        """Every label of an action field over all categories ("category" gives the categories)."""
        if field == "category":
            return tuple(self.categories)
        key = {"type": "types", "context": "contexts", "status": "statuses", "function": "functions"}[field]
        return tuple(dict.fromkeys(v for spec in self.categories.values() for v in spec[key]))

    # -- checking a story ----------------------------------------------------------------------------------------
    def check_story(self, story: Story, role: str) -> list[Issue]:
        """Labels outside the taxonomy, one issue per file field (JSON path)."""
        out: list[Issue] = []

        def check(value: str | None, allowed: tuple[str, ...] | list[str], path: str, what: str) -> None:
            if value is not None and norm(value) not in {norm(a) for a in allowed}:
                out.append(Issue("out_of_taxonomy", path, f"{what} {value!r} is not in the taxonomy", role))

        for c in story.characters:
            check(c.archetype, self.archetypes, f"{c.path}.archetype", "archetype")
        level1_of = {norm(k): k for k in self.relationships}
        sentiment_labels = list(self.sentiments) + list(POLARITIES)
        for ev in story.events:
            for rel in ev.relationships:
                check(rel.level1, list(self.relationships), f"{rel.path}.relationship_level1", "relationship_level1")
                l1 = level1_of.get(norm(rel.level1))
                allowed2 = self.relationships[l1] if l1 else self.level2s()
                check(rel.level2, allowed2, f"{rel.path}.relationship_level2",
                      f"relationship_level2 (under {l1})" if l1 else "relationship_level2")
                for k, label in enumerate(rel.sentiment):
                    check(label, sentiment_labels, f"{rel.path}.sentiment[{k}]", "sentiment")
            if ev.action is None:
                continue
            cat = {norm(k): k for k in self.categories}.get(norm(ev.action.category))
            check(ev.action.category, list(self.categories), f"{ev.path}.action_layer.category", "category")
            for field, key in (("type", "types"), ("context", "contexts"), ("status", "statuses"),
                               ("function", "functions")):
                allowed = self.categories[cat][key] if cat else self.action_values(field)
                check(ev.action.get(field), allowed, f"{ev.path}.action_layer.{field}",
                      f"{field} (under {cat})" if cat else field)
        return out


# -- loading -------------------------------------------------------------------------------------------------------
def _read(folder: Path, name: str) -> tuple[Path, dict[str, Any]]:
    path = folder / f"{name}.json"
    if not path.exists():
        path = DEFAULT_DIR / f"{name}.json"
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DataError(f"not JSON ({exc.msg} at line {exc.lineno} column {exc.colno})", file=str(path)) from None
    if not isinstance(obj, dict):
        raise DataError("expected an object", file=str(path), field="$")
    obj.pop("_doc", None)
    return path, obj


def _labels(value: Any, path: Path, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise DataError("expected a list of non-empty strings", file=str(path), field=where)
    return tuple(v.strip() for v in value)


def load_taxonomy(folder: str | Path | None = None) -> Taxonomy:
    """The taxonomy from `folder` (files absent there fall back to the shipped defaults); None: the defaults."""
    base = Path(folder) if folder else DEFAULT_DIR
    if not base.is_dir():
        raise DataError("taxonomy folder does not exist", file=str(base))
    path, rel = _read(base, "relationship")
    relationships = {k: _labels(v, path, f"$.{k}") for k, v in rel.items()}
    path, sent = _read(base, "sentiment")
    sentiments: dict[str, str] = {}
    for k, v in sent.items():
        if not isinstance(v, str) or norm(v) not in POLARITIES:
            raise DataError(f"polarity must be one of {', '.join(POLARITIES)}", file=str(path), field=f"$.{k}")
        sentiments[k] = norm(v)
    path, act = _read(base, "action")
    if not isinstance(act.get("categories"), dict) or not act["categories"]:
        raise DataError("expected an object of categories", file=str(path), field="$.categories")
    shared = {key: _labels(act.get(key, []), path, f"$.{key}") for key in ("contexts", "statuses", "functions")}
    categories: dict[str, dict[str, tuple[str, ...]]] = {}
    for cat, spec in act["categories"].items():
        if not isinstance(spec, dict):
            raise DataError("expected an object", file=str(path), field=f"$.categories.{cat}")
        categories[cat] = {"types": _labels(spec.get("types", []), path, f"$.categories.{cat}.types")}
        for key in ("contexts", "statuses", "functions"):
            own = spec.get(key)
            categories[cat][key] = _labels(own, path, f"$.categories.{cat}.{key}") if own is not None else shared[key]
    path, arch = _read(base, "archetype")
    archetypes = _labels(arch.get("archetypes", []), path, "$.archetypes")
    return Taxonomy(relationships, sentiments, categories, archetypes, source=str(base))


@functools.lru_cache(maxsize=8)
def default_taxonomy() -> Taxonomy:
    return load_taxonomy(None)
