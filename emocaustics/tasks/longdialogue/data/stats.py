"""`emocaustics data stats`: what a corpus (or a subset of it) holds, and every defect found while loading it."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from emocaustics.tasks.longdialogue.data.schema import LABELS, Corpus, Dialogue, normalise_label

_NUM = re.compile(r"_(\d+)\.json$")
_ANNOTATES = re.compile(r"annotates (\S+?\.json)")


def _num(name: str) -> int:
    m = _NUM.search(name)
    return int(m.group(1)) if m else 0


def _lengths(dialogues: Sequence[Dialogue]) -> dict[str, float]:
    if not dialogues:
        return {"min": 0, "median": 0, "p90": 0, "max": 0}
    n = np.array([len(d) for d in dialogues])
    return {"min": int(n.min()), "median": float(np.median(n)), "p90": float(np.percentile(n, 90)),
            "max": int(n.max())}


def compute(dialogues: Sequence[Dialogue], corpus: Corpus) -> dict[str, Any]:
    """The stats as a JSON-ready dict (the `--json` form)."""
    defects = corpus.defects
    chat_files = {f for d in corpus.dialogues.values() for f in d.chat_files}
    emo_files = {f for d in corpus.dialogues.values() for f in d.emo_files} | {
        x.file for x in defects if x.file.startswith("emo_")}
    sentiments: Counter[str] = Counter()
    states: Counter[str] = Counter()
    # noise of the selection, by raw label (so "Neutral" is not noise but "doubtful" and '' are)
    noise: Counter[str] = Counter()
    for d in dialogues:
        for u in d.utterances:
            raw = u.gt.sentiment if u.gt else ""
            sentiments[normalise_label(raw)] += 1
            if normalise_label(raw) not in LABELS:
                noise[f"sentiment:{raw!r}"] += 1
        for evs in (d.chains or {}).values():
            for ev in evs:
                for e in ev.emotions:
                    states[normalise_label(e.state)] += 1
                    if normalise_label(e.state) not in LABELS:
                        noise[f"state:{e.state!r}"] += 1
    kinds = Counter(x.kind for x in defects)
    dup = [x for x in defects if x.kind == "duplicate"]
    selected_files = {f for d in dialogues for f in d.chat_files + d.emo_files}
    return {
        "root": corpus.root,
        "pairing": corpus.pairing,
        "files": {"chat": len(chat_files), "emo": len(emo_files)},
        "dialogues": len(dialogues),
        "dialogues_in_corpus": len(corpus.dialogues),
        "ids": [d.id for d in dialogues],
        "utterances": sum(len(d) for d in dialogues),
        "holders": sum(len(d.holders) for d in dialogues),
        "utterances_per_dialogue": _lengths(dialogues),
        "without_chains": [d.id for d in dialogues if d.chains is None],
        "labels": {"sentiment": dict(sentiments.most_common()), "state": dict(states.most_common())},
        "label_noise": dict(noise.most_common()),
        "duplicates": sum(x.file.startswith("chat_") for x in dup),
        # a duplicate's message names the file it copies: "byte-identical to chat_1.json; counted once"
        "duplicate_pairs": sorted(([x.message.split()[2].rstrip(";"), x.file] for x in dup),
                                  key=lambda p: (p[0][:4], _num(p[0]))),
        "mispaired": sorted(({"emo": x.file, "annotates": _annotated(x.message)} for x in defects
                             if x.kind == "mispaired"), key=lambda m: _num(m["emo"])),
        "malformed": [{"file": x.file, "line": x.line, "column": x.column, "error": x.message}
                      for x in defects if x.kind in ("malformed", "encoding", "repaired", "unreadable")],
        "pairing_notes": [{"emo": x.file, "status": x.kind.removeprefix("pairing_"), "note": x.message}
                          for x in defects if x.kind.startswith("pairing_")],
        "defect_counts": dict(sorted(kinds.items())),
        "defects_in_selection": [str(x) for x in defects if x.file in selected_files
                                 and x.kind not in ("duplicate", "mispaired", "source_self")],
    }


def _annotated(message: str) -> str:
    m = _ANNOTATES.search(message)
    return m.group(1) if m else ""


def render(s: dict[str, Any]) -> str:
    """The human form."""
    u = s["utterances_per_dialogue"]
    lines = [
        f"data: {s['root']} (pairing: {s['pairing']})",
        f"files: {s['files']['chat']} chat, {s['files']['emo']} emo; duplicates: {s['duplicates']} chat files are "
        "byte-identical copies",
        f"dialogues: {s['dialogues']} selected of {s['dialogues_in_corpus']}; utterances: {s['utterances']}; "
        f"holders: {s['holders']}",
        f"utterances per dialogue: min {u['min']}, median {u['median']:g}, p90 {u['p90']:g}, max {u['max']}",
        "sentiments: " + ", ".join(f"{k or repr('')} {v}" for k, v in s["labels"]["sentiment"].items()),
        "states: " + ", ".join(f"{k or repr('')} {v}" for k, v in s["labels"]["state"].items()),
    ]
    if s["label_noise"]:
        lines.append("label noise: " + ", ".join(f"{k} x{v}" for k, v in s["label_noise"].items()))
    if s["mispaired"]:
        head = "".join(f"{m['emo']}->{m['annotates']}, " for m in s["mispaired"][:5])
        lines.append(f"mispaired: {len(s['mispaired'])} emo files annotate another chat number ({head} ...)")
    for m in s["malformed"]:
        lines.append(f"malformed: {m['file']} line {m['line']} column {m['column']}: {m['error']}")
    if s["pairing_notes"]:
        lines.append(f"pairing not verified by text for {len(s['pairing_notes'])} emo files (see --json "
                     "pairing_notes): " + ", ".join(f"{p['emo']} {p['status']}" for p in s["pairing_notes"]))
    if s["without_chains"]:
        lines.append(f"no usable emotion chains: ids {s['without_chains']}")
    lines.append("defects: " + ", ".join(f"{k} {v}" for k, v in s["defect_counts"].items()))
    return "\n".join(lines)
