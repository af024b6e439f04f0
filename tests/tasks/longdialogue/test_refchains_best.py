"""The reference's choice of a predicted event / emotion (`chains._best` under `REFERENCE_CHAINS`): the first option of greatest cosine
strictly above 0 (it starts from 0.0 and replaces only on `>`), a NaN cosine never taken."""

import math

from emocaustics.tasks.longdialogue.score.chains import _best
from emocaustics.tasks.longdialogue.score.policy import REFERENCE_CHAINS


def choose(cos: list[float]):
    texts = [f"p{k}" for k in range(len(cos))]
    return _best("gt", list(enumerate(texts)), lambda a, b: cos[texts.index(b)], REFERENCE_CHAINS, "w")


def test_first_of_the_greatest_cosine_above_zero():
    assert choose([-0.5, 0.0, 0.4, 0.4, 0.7, 0.7, 0.1]) == (4, 0.7)
    assert choose([0.3, 0.3]) == (0, 0.3)


def test_nothing_at_or_below_zero_and_nan_never_taken():
    assert choose([]) is None
    assert choose([0.0, -0.2]) is None
    assert choose([math.nan, 0.2, math.nan]) == (1, 0.2)
    assert choose([math.nan]) is None
