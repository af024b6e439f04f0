"""Two runs that would share a label but differ (another dataset file) are an error, never one of them dropped;
`name:` sets a run's label."""

from __future__ import annotations

import pytest

from emocaustics.jobs.spec import JobSpec


def _job(runs):
    return {"name": "labels", "runs": runs}


def test_same_label_different_dataset_is_an_error_naming_the_label():
    runs = [{"task": "sextuple", "method": "oracle", "dataset": {"subset": "sample"}},
            {"task": "sextuple", "method": "oracle", "dataset": {"subset": "paper-100"}}]
    with pytest.raises(ValueError, match=r"both labelled 'sextuple_oracle'.*give one of them a `name:`"):
        JobSpec.model_validate(_job(runs)).expand()


def test_a_name_keeps_both_runs_and_an_exact_duplicate_is_refused():
    runs = [{"task": "sextuple", "method": "oracle", "dataset": {"subset": "sample"}},
            {"task": "sextuple", "method": "oracle", "dataset": {"subset": "paper-100"}, "name": "oracle-paper"}]
    labels = [r.label for r in JobSpec.model_validate(_job(runs)).expand()]
    assert labels == ["sextuple_oracle", "oracle-paper"]
    # issue 41 (14): the same run listed twice ran once, silently; it is named instead
    with pytest.raises(ValueError, match="runs.2 is the same run as runs.0"):
        JobSpec.model_validate(_job([*runs, runs[0]]))


# Issue 25 point 7: a label names each grid axis value (defaults included) and leaves out what is constant.
GRID = {"name": "axes", "dataset": {"aer": {"split": "sample"}},
        "models": {"api": {"spec": "openai:m@http://127.0.0.1:1/v1"}, "local": {"spec": "smoke"}},
        "runs": [{"task": "aer", "options": {"method": "oracle"}}],
        "grid": {"task": ["aer"], "model": ["api", "local"], "context": ["none", "full"],
                 "prompt": ["zero-shot", "cot"], "options": {"method": "llm", "max_context_tokens": 16000}}}


def test_labels_name_every_grid_axis_and_leave_out_constants():
    labels = [r.label for r in JobSpec.model_validate(GRID).expand()]
    assert labels[0] == "aer_oracle"
    cells = labels[1:]
    assert len(cells) == len(set(cells)) == 2 * 2 * 2
    assert "aer_llm_api_context=full_prompt=cot" in cells
    assert "aer_llm_local_context=none_prompt=zero-shot" in cells  # the defaults are named too: they are axis values
    assert not any("max_context_tokens" in label for label in labels)  # constant across the grid


def test_labels_are_stable_so_a_resume_finds_the_same_folders():
    from emocaustics.jobs.rundir import job_hash
    from emocaustics.jobs.spec import result_fields

    first, again = JobSpec.model_validate(GRID), JobSpec.model_validate(GRID)
    assert [r.label for r in first.expand()] == [r.label for r in again.expand()]
    assert job_hash(first) == job_hash(again)
    assert {r["label"] for r in result_fields(first)["runs"]} == {r.label for r in again.expand()}


def test_a_config_alone_of_its_method_keeps_the_options_it_sets():
    runs = [{"task": "ecpe", "options": {"method": "direct", "max_pairs": 12}, "model": "m"},
            {"task": "ecpe", "options": {"method": "utterance"}, "model": "m"}]
    job = JobSpec.model_validate({"name": "lone", "models": {"m": {"spec": "smoke"}}, "runs": runs})
    assert [r.label for r in job.expand()] == ["ecpe_direct_m_max_pairs=12", "ecpe_utterance_m"]
