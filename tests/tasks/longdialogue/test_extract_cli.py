"""`emocaustics extract` argument handling: user mistakes are one-line errors with exit status 2, before any model
or Ray starts."""

import pytest

from emocaustics.cli import main


@pytest.mark.parametrize("argv,msg", [
    (["extract", "emotion", "--method", "rag"], "emotion chains have the methods direct and window"),
    (["extract", "sextuple", "--method", "window", "--window", "5", "--step", "6"], "step 6 is larger than window 5"),
    (["extract", "sextuple", "--method", "direct", "--from", "x"], "--from is for `extract emotion --method window`"),
    (["extract", "emotion", "--method", "window", "--from", "/nonexistent/dir"], "not a directory"),
    (["extract", "sextuple", "--method", "direct", "--subset", "nope"], "unknown subset"),
])
def test_usage_errors(argv, msg, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("emocaustics: error:") and msg in err and err.count("\n") == 1


def test_bad_ids_and_method_are_argparse_errors(capsys):
    with pytest.raises(SystemExit) as e:
        main(["extract", "sextuple", "--method", "direct", "--ids", "1,x"])
    assert e.value.code == 2
    with pytest.raises(SystemExit):
        main(["extract", "sextuple", "--method", "bogus"])
