"""What a sentence end takes with it: further terminators, closing quotes or brackets, then any whitespace (Unicode
whitespace included, as str.isspace); a line break takes the whitespace after it."""

from emocaustics.tasks.narrative.spans import split_sentences


def test_a_sentence_end_takes_terminators_closers_and_whitespace():
    assert split_sentences("A b!?」 C d. E") == [(0, 7), (7, 12), (12, 13)]
    assert split_sentences("x.\xa0Y") == [(0, 3), (3, 4)]  # a no-break space is whitespace
    assert split_sentences("Wait...」) Go") == [(0, 10), (10, 12)]  # an ellipsis run, then two closers
    assert split_sentences("One\n \u3000Two") == [(0, 6), (6, 9)]  # the line break takes the full-width space too
    assert split_sentences("Mr. Li came.") == [(0, 12)]  # an abbreviation is no sentence end
