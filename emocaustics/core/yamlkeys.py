"""YAML read as a job file is: a key given twice in one mapping is an error naming its line, where PyYAML would keep
the last one silently (a second `runs:` replacing the first, a model entry's `spec:` given twice)."""

from __future__ import annotations

from typing import Any

import yaml


class DuplicateKey(yaml.YAMLError):
    """A mapping that gives a key twice; the message is one line: where and which key."""


class _UniqueKeys(yaml.SafeLoader):
    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":  # `<<: *base`: its keys may be overridden, by design
                continue
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            try:
                first = seen.get(key)
                seen.setdefault(key, line)
            except TypeError:  # an unhashable key: SafeLoader's own error names it
                break
            if first is not None:
                raise DuplicateKey(f"line {line}: key {key!r} is given twice (first on line {first}); YAML would "
                                   "keep only the last: give it once")
        return super().construct_mapping(node, deep=deep)


def safe_load_unique(text: str) -> Any:
    """`yaml.safe_load`, but a key given twice in a mapping raises `DuplicateKey`."""
    return yaml.load(text, Loader=_UniqueKeys)  # noqa: S506 (a SafeLoader)
