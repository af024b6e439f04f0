"""Window arithmetic for the sliding-window methods.

A window is *trailing*: window i absorbs the step's new utterances [i*S, min((i+1)*S, N)) and shows the model the
last K utterances ending with them, [max(0, end-K), end). So a window's text never reaches past its last new
utterance, the new ranges partition the dialogue (every utterance is absorbed exactly once), and consecutive
windows overlap by K-S utterances of context. (The reference slides [i*S, i*S+K) forward, which shows each
utterance up to K-1 later utterances; ours shows at most the S-1 that share its step, none when S=1.)
"""

from __future__ import annotations

from dataclasses import dataclass

# (K, S) of each task's windowed methods when a config names none: the paper's settings.
DEFAULT_WINDOWS = {"sextuple": (20, 5), "emotion": (30, 10)}


@dataclass(frozen=True, slots=True)
class Window:
    index: int
    start: int  # first utterance shown (context included)
    new_start: int  # first utterance this window absorbs
    end: int  # one past the last utterance shown and absorbed

    @property
    def shown(self) -> range:
        return range(self.start, self.end)

    @property
    def new(self) -> range:
        return range(self.new_start, self.end)


def windows(n: int, k: int, s: int) -> list[Window]:
    """The windows over a dialogue of n utterances, in order. K and S must be positive and S <= K (a step larger than
    the window would skip utterances' context)."""
    if k < 1 or s < 1:
        raise ValueError(f"window K={k} and step S={s} must both be >= 1")
    if s > k:
        raise ValueError(f"step S={s} is larger than window K={k}: the absorbed utterances would not all be shown")
    out: list[Window] = []
    for i, new_start in enumerate(range(0, n, s)):
        end = min(n, new_start + s)
        out.append(Window(index=i, start=max(0, end - k), new_start=new_start, end=end))
    return out


def recent_history(utterance: int, k: int) -> range:
    """The K utterances ending with `utterance` (used by `rag`): never anything after it."""
    return range(max(0, utterance - k + 1), utterance + 1)
