"""`split_sentences` tiles the text, and only the first piece can be whitespace only (every cut takes the whitespace
after it, so a later piece starts at a character that is not a space): the reason `cut` has no branch that joins a
blank piece to the one before, and the leading-whitespace rule at the end is the only joining there is."""

from __future__ import annotations

import random

from emocaustics.tasks.narrative.spans import split_sentences

ALPHABET = ["a", "B", "Mr", " ", "  ", "\n", "\t", "\u3000", "\u00a0", ".", "...", "。", "！", "?", "”", ")", "e.g.",
            "no.", "1.5", "\r\n"]


def test_pieces_tile_the_text_and_none_after_the_first_is_blank() -> None:
    rng = random.Random(7)
    texts = ["", " ", "\n\n", "A.", "  Hello. World!  ", "\n\nHi。\u3000\u3000Yes？ ", "Mr. Smith went. Then…"]
    texts += ["".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 30))) for _ in range(3000)]
    for text in texts:
        pieces = split_sentences(text)
        assert [p for p in pieces if p[0] >= p[1]] == [], text
        assert "".join(text[a:b] for a, b in pieces) == text, text  # a tiling: in order, no gap, no overlap
        assert all(text[a:b].strip() for a, b in pieces[1:]), text
        assert len(pieces) <= 1 or text[pieces[0][0]:pieces[0][1]].strip(), text
        assert all(not text[a].isspace() for a, _ in pieces[1:]), text
