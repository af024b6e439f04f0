"""The prompts version covers every prompt the extraction methods send (a change to any one changes it)."""

from string import Template

from emocaustics.tasks.longdialogue.extract import prompts as P


def test_every_template_and_the_system_text_are_versioned():
    templates = {v.template for v in vars(P).values() if isinstance(v, Template)}
    assert len(templates) == 7 and set(P.TEMPLATES.values()) == templates | {P.SYSTEM}
    assert P.TEMPLATES["window_pass2"] == P.WINDOW_PASS2.template and P.TEMPLATES["system"] == P.SYSTEM
