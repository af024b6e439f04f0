"""What a job will do (`run --dry-run`) and the checks before anything starts (pre-flight).

Both run before Ray starts and before the run folder is touched:
- `load_all` loads each config's samples once (configs sharing a task, dataset and options share the load); the
  runner reuses the result, so the pre-flight load is not paid twice.
- `describe` is the dry run: the problems a real run would stop at, first (a spec or model path that cannot be
  used, a dataset that does not load or selects nothing, an unpriced endpoint under `max_cost_usd`, a taken run
  folder; the command then exits 2), then expanded configs, samples per config, forecast LLM calls and prompt tokens
  (each config's own prompts, built by its solver path with the model and embedder stood in: solve/forecast.py,
  counted with the model's tokenizer where it is local), generated tokens (at most: the requests' own max_tokens),
  dollars at the model's price (`check_budget`; "unknown" without one), models with their placement, where outputs
  and cache go. A config that cannot run is not forecast: its row names its problem.
- `checked` checks, in this order, the datasets, the budget, the embedder, every model (an endpoint gets one cheap request, a
  path must exist, a hub name must be cached or reachable) and stops at the first problem with one line that names it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from emocaustics.core.errors import PreflightError, UsageError
from emocaustics.core.task import Loaded, Options, Task, needs_model
from emocaustics.jobs.configs import Resolved
from emocaustics.jobs.spec import ModelSpec
from emocaustics.models.cacheplace import CacheChoice
from emocaustics.models.prices import Price, table as price_table
from emocaustics.models.registry import endpoint_name, probed, reach
from emocaustics.models.spec import LLMSpec


def load_all(configs: list[Any]) -> dict[str, Loaded | UsageError]:
    """Each config's loaded samples (or the error that loading raised), by label; equal loads are shared. The one
    place a config's sample selection (`select:`, `SelectSpec.load`) is applied: everything after (the dry run, the
    solve, the scores, the provenance, a resume) sees the selected samples only."""
    memo: dict[str, Loaded | UsageError] = {}
    out: dict[str, Loaded | UsageError] = {}
    for cfg in configs:
        select = cfg.select
        key = (f"{cfg.task.name}|{cfg.dataset.model_dump_json()}|{cfg.options.model_dump_json()}|"
               f"{select.model_dump_json() if select is not None else ''}")
        if key not in memo:
            try:
                got = (cfg.task.data.load(cfg.dataset, cfg.options) if select is None
                       else select.load(cfg.task, cfg.dataset, cfg.options))
                memo[key] = require_ground_truth(cfg.task, got, cfg.options)  # before anything runs
            except UsageError as exc:
                memo[key] = exc
            except (OSError, ValueError, KeyError) as exc:
                memo[key] = UsageError(f"{type(exc).__name__}: {exc}")
        out[cfg.label] = memo[key]
    return out


def require_ground_truth(task: Task, loaded: Loaded, options: Options) -> Loaded:
    """`loaded`, once the task (when it checks: `Data.check_ground_truth`) has found ground truth in it. A run whose
    ground truth is missing or empty (an empty `emo/` folder, a split without its gold answers, a gold file whose
    conversations have no pair) would solve every sample and then report "score None" with no failure; checked on the
    selected samples as `load_all` loads them, so the real run and `--dry-run` both stop before anything runs, with
    one line naming the path and what is missing."""
    if loaded.samples:  # no sample at all is the pre-flight's own problem
        task.data.check_ground_truth(loaded, options)
    return loaded


def placement(model: ModelSpec) -> str:
    if probed(model.spec):  # as before: a litellm model (no pre-flight GET) shows as replicas
        stall = f"{model.stall_seconds:g} s" if model.stall_seconds else "two client timeouts (>= 30 s)"
        return (f"remote endpoint, {model.concurrency} requests in flight, declared dead after "
                f"{model.max_connection_failures} connection failures or {model.max_server_errors} server errors in a "
                f"row, or no answer for {stall}")
    gpus = f"{model.gpus_per_replica:g} GPU(s) each" if model.gpus_per_replica else "no GPU (CPU engine)"
    tp = f", tensor parallel {int(model.gpus_per_replica)}" if model.gpus_per_replica > 1 else ""
    return f"{model.replicas} replica(s), {gpus}{tp}, placement {model.placement}"


@dataclass(frozen=True)
class DryRun:
    """The dry run's text, its problems first; `problems`: one line each (none: a real run would start)."""

    text: str
    problems: tuple[str, ...] = ()

    def __str__(self) -> str:
        return self.text

    def check(self) -> None:
        """Exit status 2 (a UsageError) when the dry run found a problem, so that a dry run can gate a CI job."""
        if self.problems:
            more = f" (and {len(self.problems) - 1} more, listed above)" if len(self.problems) > 1 else ""
            raise UsageError(f"the dry run found {len(self.problems)} problem(s): {self.problems[0]}{more}")


def _model_problems(resolved: Resolved, *, network: bool = False) -> dict[str, str]:
    """What stops a model the configs use, or the judge (a spec that does not parse, a path that does not exist; with
    `network`, a dead endpoint or a hub name that cannot be had: then only the first), by job model name (the judge's
    spec when it is no job model)."""
    found: dict[str, str] = {}
    for where, name, llm, _ in resolved.called:
        try:
            if isinstance(llm, UsageError):  # a spec that does not parse
                raise llm
            reach(llm, network=network)
        except UsageError as exc:  # a PreflightError too
            found[name] = f"{where}: {exc}"
            if network:  # the pre-flight stops at the first: no further endpoint is asked
                break
    return found


def check_budget(resolved: Resolved) -> dict[str, Price]:
    """The price of every remote endpoint the configs or the judge call (priced where the job was resolved:
    `jobs/configs.py`), by its endpoint name (a spec that does not parse is left to the pre-flight, which names it).
    `max_cost_usd` needs a price for each: a usage error names the first without one. The run's ledger, made in the
    start phase (models/budget.py, which raises the typed stop), spends against these prices."""
    out = {}
    for where, _, llm, price in resolved.called:
        if not isinstance(llm, LLMSpec) or not llm.remote:
            continue
        if price is not None:
            out[endpoint_name(llm)] = price
        elif resolved.job.max_cost_usd is not None:
            raise UsageError(f"{where}: max_cost_usd is set but {llm.identity} has no known price (the shipped "
                             f"table of {price_table()['as_of']} does not list it): give its `price: "
                             "{input: USD, output: USD}` per 1M tokens")  # not an f-string: one brace each
    return out


def describe(resolved: Resolved, loaded: dict[str, Loaded | UsageError], run_dir: Path, cache_dir: CacheChoice | None,
             *, resume: bool = False, retry_limits: bool = False) -> DryRun:
    """The dry run: its problems first, numbered (a config that cannot run is not forecast: its row names its
    problem), then the plan; with `resume`, of the samples the resume would solve (the done ones are skipped)."""
    from emocaustics.jobs import rundir

    job, configs = resolved.job, resolved.configs
    problems: dict[str, list[str]] = {}  # message -> the labels of the configs it stops (none: the job's)

    def problem(message: str, label: str | None = None) -> str:
        """Record a problem (once per message, with the configs it stops); 'problem N', as listed first."""
        problems.setdefault(message, []).extend([label] if label else [])
        return f"problem {list(problems).index(message) + 1}"

    try:
        rundir.claim(run_dir, resolved, resume=resume, force=False)
    except UsageError as exc:
        problem(str(exc))
    bad_models = _model_problems(resolved)
    try:
        check_budget(resolved)
        unpriced = None
    except UsageError as exc:  # max_cost_usd with an endpoint that has no price
        unpriced = str(exc)
    lines = [f"job {job.name} (hash {rundir.job_hash(job)}): {len(configs)} configs",
             f"outputs: {run_dir}", f"response cache: {cache_dir.describe() if cache_dir else 'off'}"]
    llms = {c.model: c.llm for c in configs if c.model}  # each model a config uses, parsed with the job
    lines.append("models:" if llms else "models: none (calibration rows only)")
    for name in sorted(llms):
        m = job.models[name]
        source = f"see {problem(bad_models[name])}" if name in bad_models else reach(llms[name], network=False)
        lines.append(f"  {name}: {m.spec} -- {placement(m)}; weights: {source}")
    if job.scoring.judge in bad_models:
        problem(bad_models[job.scoring.judge])
    lines.append(f"scoring: embedder {job.scoring.embedder}, judge {job.scoring.judge}")
    table = ["configs:", "| config | task | method | model | samples | LLM calls | prompt tokens | "
             "generated tokens (at most) | cost (USD) |", "|" + "---|" * 9]
    totals = [0, 0, 0]
    usd: list[float | None] = []  # each model config's forecast dollars (None: price unknown)
    resumed: list[str] = []  # with `resume`: each config's done and to-run counts, as the resume will print them
    counters: dict[str, Any] = {}
    for cfg in configs:
        got = loaded[cfg.label]
        n = "?" if isinstance(got, UsageError) else len(got.samples)
        remote = cfg.llm is not None and cfg.llm.remote
        if isinstance(got, UsageError):
            why = problem(f"dataset: {got}", cfg.label)
        elif not got.samples:
            why = problem("the dataset selection has no samples", cfg.label)
        elif cfg.model in bad_models:
            why = problem(bad_models[cfg.model])
        elif unpriced and remote and cfg.price is None:
            why = problem(unpriced)
        elif needs_model(cfg.task, cfg.options):
            try:
                left = None
                if resume and cfg.pred_dir.exists():
                    from emocaustics.jobs.epochs import left_per_epoch, resume_line

                    left = left_per_epoch(cfg, got.samples, retry_limits)
                    resumed.append("  " + resume_line(cfg, got.samples, retry_limits))
                figures = _forecast(cfg, got, counters, left)
                why = None
            except UsageError as exc:
                why = problem(f"prompts: {exc}", cfg.label)
        else:
            why, figures = None, None
        if why is not None:
            shown = [f"not forecast: {why}", "-", "-", "-"]
        elif figures is None:
            shown = ["0 (calibration)", "0", "0", "$0"]
        else:
            totals = [a + b for a, b in zip(totals, figures)]
            usd.append(_dollars(cfg.price, figures, cfg.batch))
            shown = [f"{v:,}" for v in figures[:3]] + ["unknown" if usd[-1] is None else f"${usd[-1]:,.4f}"]
            if cfg.batch:  # batch: true -- which calls go through the batch API, which stay live (models/batch.py)
                shown[0] += f" ({figures[0] - figures[3]:,} batch, {figures[3]:,} live)"
        table.append(f"| {cfg.label} | {cfg.task.name} | {cfg.options.method} | {cfg.model or '-'} | {n} | "
                     + " | ".join(shown) + " |")
    if unpriced:
        problem(unpriced)  # the judge's, when no config's model is the one unpriced
    lines += table
    if resumed:
        lines += ["forecast of the resume: only the samples it solves (the done ones are skipped):", *resumed]
    known = sum(u for u in usd if u is not None)
    skipped = sum(1 for row in table if "| not forecast: problem" in row)
    lines.append(f"total: {totals[0]:,} LLM calls, {totals[1]:,} prompt tokens, at most {totals[2]:,} generated "
                 f"tokens, ${known:,.4f}" + (f" + unknown ({usd.count(None)} configs' models have no price)"
                                             if None in usd else "")
                 + (f" (max_cost_usd {job.max_cost_usd:g})" if job.max_cost_usd is not None else "")
                 + (f"; {skipped} configs not forecast (their problems are above)" if skipped else ""))
    lines.append(f"prices: USD per 1M tokens, the shipped table of {price_table()['as_of']} or the job's `price:`; "
                 "dollars forecast from the token forecast at live prices (a `batch: true` model's batch calls at "
                 "its batch prices), cache hits not deducted")
    if counters:
        lines.append("forecast: LLM calls and prompt tokens are those of the prompts each config's solver builds "
                     "(documents, passages, examples, histories included), counted with:")
        lines += [f"  {name}: {c.name}" for name, c in sorted(counters.items())]
        lines.append("  stood in: the model's answers (prompts that show earlier answers grow or shrink with the "
                     "model's), the embedder (no embedder is loaded: retrieval picks passages of typical size, not "
                     "the real top-k); retries are not counted; generated tokens: each request's own max_tokens, "
                     "an upper bound")
    found = []
    for message, labels in problems.items():
        named = ", ".join(labels[:3]) + (f" and {len(labels) - 3} more" if len(labels) > 3 else "")
        found.append(f"config{'s' if len(labels) > 1 else ''} {named}: {message}" if labels else message)
    head = ([f"PROBLEMS: {len(found)} (a real run would stop at the first; this dry run exits with status 2)"]
            + [f"  problem {i}: {p}" for i, p in enumerate(found, 1)]) if found else []
    return DryRun("\n".join(head + lines + ["dry run: nothing was started or written"]), tuple(found))


def _dollars(price: Any, figures: list[int], batch: bool) -> float | None:
    """A config's forecast dollars; with `batch`, the calls not marked live at the batch price (generated tokens
    shared out by calls)."""
    if price is None:
        return None
    calls, prompt, generated, live_calls, live_prompt = figures
    if not batch or not calls:
        return price.cost(prompt, generated)
    live_generated = generated * live_calls // calls
    return price.cost(live_prompt, live_generated) + price.cost(prompt - live_prompt, generated - live_generated,
                                                                batch=True)


def _forecast(cfg: Any, got: Loaded, counters: dict[str, Any], left: list[list] | None = None) -> list[int]:
    """[LLM calls, prompt tokens, generated tokens, live calls, live prompt tokens] of one config
    (solve/forecast.py), summed over its epochs: each asks every sample again (jobs/epochs.py), or, for a resume,
    the samples `left` in it; one counter per model."""
    from emocaustics.solve.forecast import counter_for, forecast

    if cfg.model not in counters:
        counters[cfg.model] = counter_for(cfg.llm)
    figures, seen = [0] * 5, {}
    for samples in left if left is not None else [got.samples] * cfg.epochs:
        ids = tuple(s.id for s in samples)
        if samples and ids not in seen:  # epochs with the same samples are forecast once; none left: nothing
            seen[ids] = forecast(cfg.task, samples, cfg.options, counters[cfg.model], prior=cfg.prior is not None)
        figures = [a + b for a, b in zip(figures, seen[ids] if samples else [0] * 5)]
    return figures


class Checked(NamedTuple):
    """What the pre-flight hands the start phase: every config's samples by label, the price of every endpoint the
    job calls by its endpoint name, and the response cache (`models/cacheplace.choose`; None: off)."""

    loaded: dict[str, Loaded]
    prices: dict[str, Price]
    cache: CacheChoice | None


def checked(resolved: Resolved, *, network: bool = True) -> Checked:
    """The pre-flight phase of a run: every config's samples (`load_all`), the price of every endpoint the job
    calls (`check_budget`: the start phase's ledger spends against them) and the response cache. Stops with one line
    on the first problem: datasets, the budget, the embedder, every model the configs or the judge use, then the
    cache's file; without `network` (tests) only the datasets', the budget's, the model specs' own and the cache's
    errors stop it."""
    from emocaustics.models.cacheplace import choose
    from emocaustics.models.embedders import check_embedder

    loaded = load_all(resolved.configs)
    for cfg in resolved.configs:
        got = loaded[cfg.label]
        if isinstance(got, UsageError):
            raise PreflightError(f"config {cfg.label}: dataset: {got}") if network else got
        if network and not got.samples:
            raise PreflightError(f"config {cfg.label}: the dataset selection has no samples")
    prices = check_budget(resolved)  # max_cost_usd with an unpriced endpoint: before any network check
    if network:
        try:
            check_embedder(resolved.job.scoring.embedder)
        except UsageError as exc:
            raise PreflightError(f"scoring.embedder: {exc}") from None
        for problem in _model_problems(resolved, network=True).values():
            raise PreflightError(problem)
    for called in resolved.called:
        if isinstance(called.llm, UsageError):  # a spec that does not parse as the model layer takes it: its error
            raise called.llm
    # the job's `cache:`: the shared cache by default (read-only), a folder of the job's, or None (`off`,
    # `--no-cache`); a damaged file is a usage error here, before anything is written
    return Checked(loaded, prices, choose(resolved.job.cache))  # type: ignore[arg-type]  # errors raised above
