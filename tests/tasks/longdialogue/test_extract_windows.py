"""Window arithmetic: which utterances each window shows and absorbs, coverage, and no look-ahead."""

import pytest

from emocaustics.tasks.longdialogue.extract.windows import recent_history, windows


def spans(n, k, s):
    return [(w.start, w.new_start, w.end) for w in windows(n, k, s)]


def test_paper_defaults_on_a_short_dialogue():
    # K=20, S=5 over 12 utterances: three steps; the window shows the last 20 ending with the new ones
    assert spans(12, 20, 5) == [(0, 0, 5), (0, 5, 10), (0, 10, 12)]


def test_window_slides_once_longer_than_k():
    assert spans(30, 10, 5) == [(0, 0, 5), (0, 5, 10), (5, 10, 15), (10, 15, 20), (15, 20, 25), (20, 25, 30)]
    assert spans(7, 3, 2) == [(0, 0, 2), (1, 2, 4), (3, 4, 6), (4, 6, 7)]


@pytest.mark.parametrize("n", [0, 1, 4, 5, 6, 19, 20, 21, 57, 285])
@pytest.mark.parametrize("k,s", [(20, 5), (30, 10), (10, 10), (1, 1), (7, 3)])
def test_every_utterance_absorbed_once_and_shown_without_future(n, k, s):
    ws = windows(n, k, s)
    absorbed = [j for w in ws for j in w.new]
    assert absorbed == list(range(n))  # each exactly once, in order
    for w in ws:
        assert w.end - w.start <= k  # never more than K shown
        assert len(w.new) <= s
        assert w.start <= w.new_start < w.end  # absorbed ones are shown
        assert all(i < w.end for i in w.shown)  # nothing after the last absorbed utterance
        for j in w.new:
            assert j // s == w.index  # the window that absorbs j is the first that shows it
            assert max(w.shown) - j <= s - 1  # an utterance shares its window with at most S-1 later ones


def test_step_one_has_no_future_at_all():
    for w in windows(9, 4, 1):
        assert list(w.new) == [w.end - 1]


def test_bad_parameters():
    with pytest.raises(ValueError, match="larger than window"):
        windows(10, 5, 6)
    with pytest.raises(ValueError):
        windows(10, 0, 1)


def test_recent_history_never_looks_ahead():
    assert list(recent_history(0, 20)) == [0]
    assert list(recent_history(25, 20)) == list(range(6, 26))
