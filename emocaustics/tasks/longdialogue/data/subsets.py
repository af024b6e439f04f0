"""Named subsets of the canonical ids (the paper's numbering) and `--ids` selection."""

from __future__ import annotations

from pathlib import Path

from emocaustics.core.errors import UsageError
from emocaustics.tasks.longdialogue.data.schema import Corpus, Dialogue

# The paper's regular test set and its long dialogues (100+ turns) for the window/step comparison.
LONG_20: tuple[int, ...] = (207, 218, 223, 235, 251, 276, 313, 318, 330, 338, 365, 366, 367, 376, 381, 387, 389, 392,
                            394, 395)
SUBSETS: dict[str, tuple[int, ...] | None] = {
    "all": None,
    "paper-100": tuple(range(1, 101)),
    "long-20": LONG_20,
    "sample": None,  # the repo's own sample corpus, every dialogue
}


def default_subset(subset: str | None, ids: list[int] | None, data: str | Path | None) -> str:
    """The one default of every command (`extract`, `score`, `data stats`): the named subset; else, when ids or an
    explicit dataset folder are given, `all` of it (ids then narrow it); else our `sample` dialogues."""
    if subset:
        return subset
    return "all" if (ids or data) else "sample"


def parse_ids(text: str | None) -> list[int] | None:
    """`"1,2,5"` -> [1, 2, 5]; UsageError naming the bad part."""
    if text is None or text.strip() == "":
        return None
    ids: list[int] = []
    for part in text.replace("，", ",").split(","):
        part = part.strip()
        if not part:
            continue
        if not part.isdigit():
            raise UsageError(f"--ids: {part!r} is not a dialogue id (expected numbers like 1,2,3)")
        ids.append(int(part))
    return ids


def resolve(subset: str | None, ids: list[int] | None, *, root: str | Path | None = None, pairing: str = "verified",
            repair: bool = False, strict: bool = False) -> tuple[list[Dialogue], Corpus]:
    """The dialogues of a named subset (default `all`), optionally narrowed to `ids` (kept in the subset's order; only
    those are read where the load cache knows the folder: `loadcache.LazyDialogues`), and the corpus they come from."""
    from emocaustics.tasks.longdialogue.data.load import load_corpus, load_sample

    name = subset or "all"
    if name not in SUBSETS:
        raise UsageError(f"unknown subset {name!r}; choose one of {', '.join(SUBSETS)}")
    corpus = load_sample() if name == "sample" else load_corpus(root, pairing=pairing, repair=repair, strict=strict)
    members = SUBSETS[name]
    chosen = list(corpus.dialogues) if members is None else list(members)
    missing = [i for i in chosen if i not in corpus.dialogues]
    if missing:
        raise UsageError(f"subset {name!r}: ids {missing[:10]} are not in {corpus.root}")
    if ids is not None:
        outside = [i for i in ids if i not in chosen]
        if outside:
            raise UsageError(f"ids {outside[:10]} are not in subset {name!r} of {corpus.root}")
        chosen = [i for i in chosen if i in ids]  # the data's order, as every selection (`SelectSpec.apply`)
    return [corpus.dialogues[i] for i in chosen], corpus  # every id checked above
