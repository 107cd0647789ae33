"""Rules that span sections: tuning against the methods' search spaces, ASHA against the train
settings, analysis against the method names, replicate partitions against the samplers.

Decisions (docs/spec.md, "Cross-section rules"):
- A search space without a `tune` section is an error (nothing would sample it), and so is a
  search setting (`SEARCH_KEYS`) when no method searches anything (it would be silently unused; a
  profile that fixes every value drops them with `key: null`, or tuning with `tune: null`).
  `metric`, `mode` and `max_concurrent` stay: every run chooses its checkpoint and stops on the
  metric, and max_concurrent caps the replicates at once too. Methods without a search space
  next to ones with one are fine: their arms skip the tune phase.
- ASHA compares trials between evaluations: the arms it schedules need `eval_every: 1`, more than
  one epoch, and a grace period below the epoch count; none of these may be searched.
- Every dev metric nerplat logs is better when higher, so `mode: min` is refused.
- `train.precision: fp16` needs a GPU (`nerplat.trial.device`): a spec that gives its trials none
  (`resources.gpus_per_worker: 0`) is refused here rather than in every trial.
- Windows must move forward: `model.window_stride` (their overlap) stays below what a window of
  `model.max_length` sub-tokens holds besides the encoder's special tokens (at most
  `SPECIAL_TOKENS`), else every trial fails when it cuts its first sentence
  (`nerplat.trial.features.check_stride`, which checks the encoder's exact count).
- Under `replicate.sequential` a partitioned arm's units are its partitions (`run.looks`):
  max_seeds counts them, so every partitioned sampler setting needs at least max_seeds of them
  among the replicated partitions, or the design's last looks would have nothing to run.
  `replicate.seeds` is then the seeds of each of its partitions (`replicate_seeds`); an
  unpartitioned arm runs seeds 0..max_seeds-1, so a `seeds` beside them must equal max_seeds
  when no setting is partitioned (it would set nothing), or list max_seeds seeds for them to run
  instead: a fresh run on new draws of a seeded sampler (a `fraction` draw is seeded by its seed).
- A plan has at most `MAX_RUNS` training runs (tune trials and replicates): beyond that the
  plan itself would not fit in memory (docs/performance.md, "Figures behind the code's choices"), let alone the runs.
"""

from __future__ import annotations

import re
from typing import Any

from nerplat.config.experiment import BEST_OTHER, Analysis, Claim, Resources, Tune
from nerplat.config.trial import Component
from nerplat.errors import Problem
from nerplat.metrics import FIXED_THRESHOLD_INFIX, METRIC_NAMES
from nerplat.registry import Catalog, Registry
from nerplat.spec.loader import Document, YamlPath
from nerplat.spec.methods import ResolvedMethod
from nerplat.spec.params import check_params
from nerplat.spec.samplers import SamplerSetting
from nerplat.spec.schema import ModelSection, ReplicateSection, TuneSection
from nerplat.spec.starting_points import starting_points
from nerplat.suggest import unknown_name

# Dev metrics a tune section may optimise: `dev_<name>`, a name of `nerplat.metrics`.
_TYPE_METRIC = re.compile(r"type_.+_(precision|recall|f1)")
DEFAULT_NUM_SAMPLES = 20
MAX_RUNS = 100_000
MINIMUM_UNITS = 3  # a sequential design's first look (`analysis.sequential.MINIMUM_PAIRS`)
SPECIAL_TOKENS = 2  # [CLS] and [SEP] (BERT), <s> and </s> (RoBERTa): the most an encoder adds to a window
GRID = "grid"
ASHA = "asha"
SEARCH_KEYS = ("search", "scheduler", "num_samples", "time_budget_s", "seed", "enqueue")  # unused without a search space
FP16 = "fp16"


def check_tune(
    document: Document, tune: TuneSection | None, methods: list[ResolvedMethod] | None, catalog: Catalog
) -> tuple[Tune | None, list[Problem]]:
    """The tune settings of the plan, or the problems with them.

    `methods` is None when some method did not resolve: the tune section is then checked on its
    own, and the rules that need every method's search space wait until the methods are fixed.
    """
    at: YamlPath = ("tune",)
    searched = [m for m in methods or () if m.space]
    if tune is None:
        if not searched:
            return None, []
        first = searched[0]
        message = (
            f"method {first.name} searches {next(iter(first.space))} but the spec has no tune section; "
            "add one (e.g. tune: {search: tpe, num_samples: 20}) or give every hyper-parameter a value"
        )
        return None, [document.problem(message, ("methods", first.name))]

    problems: list[Problem] = []
    if methods is not None and not searched:
        problems += _search_settings_without_a_space(document, tune)
    searcher = _component(document, catalog.searchers, tune.search, at + ("search",), problems)
    scheduler = _component(document, catalog.schedulers, tune.scheduler, at + ("scheduler",), problems)
    metric = tune.metric.removeprefix("dev_")
    if not tune.metric.startswith("dev_") or not (metric in METRIC_NAMES or _TYPE_METRIC.fullmatch(metric)):
        known = [f"dev_{name}" for name in METRIC_NAMES]
        message = unknown_name("dev metric", tune.metric, known, listed_as="known, or dev_type_<TYPE>_f1 etc.")
        problems.append(document.problem(message, at + ("metric",)))
    if tune.mode == "min":
        problems.append(document.problem(f"{tune.metric} is better when higher: use mode: max", at + ("mode",)))
    if tune.search.name == GRID and tune.num_samples is not None:
        problems.append(document.problem("grid search runs every grid point once: remove num_samples", at + ("num_samples",)))
    if scheduler is not None and scheduler.name == ASHA:
        for method in searched:
            problems += _asha_problems(document, method, scheduler)
    num_samples = tune.num_samples or DEFAULT_NUM_SAMPLES
    enqueue: dict[str, tuple[dict[str, Any], ...]] = {}
    if methods is not None:
        enqueue, found = starting_points(document, tune.enqueue, methods, num_samples, tune.search.name)
        problems += found
    if problems or searcher is None or scheduler is None or methods is None:
        return None, problems
    return (
        Tune(
            searcher=searcher,
            scheduler=scheduler,
            metric=tune.metric,
            mode=tune.mode,
            num_samples=num_samples,
            max_concurrent=tune.max_concurrent,
            time_budget_s=tune.time_budget_s,
            seed=tune.seed,
            enqueue=enqueue,
        ),
        [],
    )


def _search_settings_without_a_space(document: Document, tune: TuneSection) -> list[Problem]:
    unused = [key for key in SEARCH_KEYS if key in tune.model_fields_set]
    if not unused:
        return []
    message = (
        f"tune.{unused[0]} is set but no method has a search space: give a hyper-parameter a distribution "
        "(e.g. lambda: {uniform: [0.0, 1.0]}), or remove the search settings ("
        + ", ".join(SEARCH_KEYS)
        + "; a profile removes one with `key: null`, all of tune with `tune: null`); without a search, "
        "tune keeps metric, mode and max_concurrent"
    )
    return [document.problem(message, ("tune", unused[0]))]


def _component(document: Document, registry: Any, ref: Any, at: YamlPath, problems: list[Problem]) -> Component | None:
    if ref.name not in registry:
        problems.append(document.problem(registry.unknown_message(ref.name), at))
        return None
    checked = check_params(document, registry.get(ref.name).config, ref.params, at + (ref.name,), f"{registry.kind} '{ref.name}'")
    problems += checked.problems
    return None if checked.problems else Component(name=ref.name, params=checked.fixed)


def _asha_problems(document: Document, method: ResolvedMethod, scheduler: Component) -> list[Problem]:
    at = method.train_at
    searched = [key for key in ("train.epochs", "train.eval_every") if key in method.space]
    if searched:
        return [
            document.problem(f"ASHA's budget is the epoch count: {key} cannot be searched under ASHA", at + (key.split(".")[1],))
            for key in searched
        ]
    problems = []
    if method.train["eval_every"] != 1:
        message = "ASHA stops trials between evaluations, so it needs one per epoch: set eval_every: 1 (or use scheduler: fifo)"
        problems.append(document.problem(message, at + ("eval_every",)))
    epochs = method.train["epochs"]
    if epochs < 2:
        problems.append(document.problem(
            "ASHA needs more than one epoch to stop anything: raise epochs or use scheduler: fifo", at + ("epochs",)
        ))
    grace = scheduler.params.get("grace_period")
    if isinstance(grace, int) and epochs >= 2 and grace >= epochs:
        message = (
            f"grace_period ({grace}) must be below epochs ({epochs} for method {method.name}): ASHA could never stop a trial"
        )
        problems.append(document.problem(message, ("tune", "scheduler", ASHA, "grace_period")))
    return problems


def check_precision(document: Document, methods: list[ResolvedMethod], resources: Resources) -> list[Problem]:
    """fp16 (fixed, or one of a searched precision's options) only on trials that get a GPU."""
    if resources.gpus_per_worker > 0:
        return []
    message = (
        "fp16 needs a GPU but method {}'s trials get none (resources.gpus_per_worker is 0): "
        "use bf16 (runs on CPUs) or fp32, or set resources.gpus_per_worker"
    )
    return [document.problem(message.format(m.name), m.train_at + ("precision",)) for m in methods if _may_run_fp16(m)]


def _may_run_fp16(method: ResolvedMethod) -> bool:
    searched = method.space.get("train.precision")
    return searched.contains(FP16) if searched is not None else method.train["precision"] == FP16


def check_window(document: Document, model: ModelSection) -> list[Problem]:
    """`model.window_stride` below the sub-tokens a window of `model.max_length` holds (see the module docstring)."""
    room = model.max_length - SPECIAL_TOKENS
    if model.window_stride < room:
        return []
    message = (
        f"model.window_stride {model.window_stride} must be smaller than the {room} sub-tokens a window of "
        f"model.max_length {model.max_length} holds besides the encoder's special tokens, or every trial fails: "
        f"lower window_stride (e.g. {room // 4}) or raise max_length above {model.window_stride + SPECIAL_TOKENS}"
    )
    written = ("model", "window_stride") in document.locations
    return [document.problem(message, ("model", "window_stride" if written else "max_length"))]


def check_analysis(
    document: Document, analysis: Analysis, method_names: list[str], settings: list[SamplerSetting] | None
) -> list[Problem]:
    """Analysis names methods and sampler settings of the spec (settings None: not known, unchecked)."""
    at: YamlPath = ("analysis",)
    problems = []
    labels = [s.label for s in settings or []]
    if analysis.reference_sampler is not None and settings is not None and analysis.reference_sampler not in labels:
        message = unknown_name("sampler setting", analysis.reference_sampler, labels, "settings")
        problems.append(document.problem(message, at + ("reference_sampler",)))
    if analysis.baseline is not None and analysis.baseline not in method_names:
        problems.append(document.problem(unknown_name("method", analysis.baseline, method_names, "methods"), at + ("baseline",)))
    for i, pair in enumerate(analysis.comparisons):
        for j, name in enumerate(pair):
            if name not in method_names:
                problems.append(
                    document.problem(unknown_name("method", name, method_names, "methods"), at + ("comparisons", i, j))
                )
        if pair[0] == pair[1]:
            problems.append(document.problem(f"comparing {pair[0]} with itself tests nothing", at + ("comparisons", i)))
    for i, name in enumerate(analysis.against_best):
        if name not in method_names:
            problems.append(document.problem(unknown_name("method", name, method_names, "methods"), at + ("against_best", i)))
    return problems


def check_claims(
    document: Document,
    claims: list[Claim],
    methods: list[ResolvedMethod],
    dataset_labels: list[str] | None,
    settings: list[SamplerSetting] | None,
    heads: Registry,
) -> list[Problem]:
    """Claims name methods, datasets and sampler settings of the spec, each id once, and their
    method and partner run together somewhere in `where` (None: not known, unchecked); a claim at a
    fixed threshold compares methods whose heads have one."""
    names = [m.name for m in methods]
    labels = [s.label for s in settings] if settings is not None else None
    problems, seen = [], set()
    for i, claim in enumerate(claims):
        at: YamlPath = ("claims", i)
        if claim.id in seen:
            problems.append(document.problem(f"claim id '{claim.id}' is used twice: give each claim its own id", at + ("id",)))
        seen.add(claim.id)
        named = [("method", claim.method)] + ([("partner", claim.partner)] if claim.partner != BEST_OTHER else [])
        unknown = [(key, name) for key, name in named if name not in names]
        for key, name in unknown:
            message = unknown_name("method", name, names, "methods")
            if key == "partner":
                message += f"; or {BEST_OTHER} (the other method with the best mean dev score)"
            problems.append(document.problem(message, at + (key,)))
        if claim.metric.startswith(FIXED_THRESHOLD_INFIX) and not unknown:
            for _, name in named:
                head = next(m for m in methods if m.name == name).head.name
                if "threshold" not in heads.get(head).config.model_fields:
                    problems.append(document.problem(
                        f"{claim.metric} is scored at a head's fixed decision threshold, and {name}'s head {head} has "
                        "none: compare methods whose heads decide by a threshold (two_task), or use "
                        "conlleval_micro_f1", at + ("metric",)))
        if claim.method == claim.partner and claim.partner_sampler in (None, claim.where.sampler):
            problems.append(document.problem(f"a claim comparing {claim.method} with itself tests nothing", at + ("partner",)))
        where = claim.where
        if where.dataset is not None and dataset_labels is not None and where.dataset not in dataset_labels:
            problems.append(document.problem(
                unknown_name("dataset", where.dataset, dataset_labels, "datasets"), at + ("where", "dataset")
            ))
        if where.sampler is not None and labels is not None and where.sampler not in labels:
            problems.append(document.problem(
                unknown_name("sampler setting", where.sampler, labels, "settings"), at + ("where", "sampler")
            ))
        if claim.partner_sampler is not None and labels is not None and claim.partner_sampler not in labels:
            problems.append(document.problem(
                unknown_name("sampler setting", claim.partner_sampler, labels, "settings"), at + ("partner_sampler",)
            ))
        if unknown or labels is None or claim.partner_sampler is not None or where.sampler not in (None, *labels):
            continue
        wanted = [claim.method] + ([claim.partner] if claim.partner != BEST_OTHER else [])
        shared = [s for s in labels if where.sampler in (None, s) and all(_runs_with(methods, name, s) for name in wanted)]
        if not shared:
            problems.append(document.problem(
                f"{' and '.join(wanted)} never run with the same sampler setting"
                + (f" ({where.sampler})" if where.sampler else "") + ": the claim has no paired runs to test", at))
    return problems


def _runs_with(methods: list[ResolvedMethod], name: str, label: str) -> bool:
    method = next(m for m in methods if m.name == name)
    return method.samplers is None or label in method.samplers


def check_method_samplers(document: Document, methods: list[ResolvedMethod], settings: list[SamplerSetting]) -> list[Problem]:
    """A method's `samplers` must name sampler settings of the spec, by their labels."""
    labels = [s.label for s in settings]
    return [
        document.problem(unknown_name("sampler setting", label, labels, listed_as="settings"), ("methods", m.name, "samplers", i))
        for m in methods
        for i, label in enumerate(m.samplers or ())
        if label not in labels
    ]


def replicate_seeds(replicate: ReplicateSection, settings: list[SamplerSetting]) -> dict[str, tuple[int, ...]]:
    """The seeds every replicated partition of each sampler setting runs, by label: `replicate.seeds`.

    Under `replicate.sequential`, max_seeds counts units (`run.looks`): an unpartitioned setting
    runs seeds 0..max_seeds-1 (or the max_seeds seeds `replicate.seeds` lists when no setting is
    partitioned), a partitioned one its partitions, each with `replicate.seeds` (seed 0 alone when
    the spec gives none), so its arms hold partitions x seeds replicates.
    """
    given = tuple(range(replicate.seeds)) if isinstance(replicate.seeds, int) else tuple(replicate.seeds)
    sequential = replicate.sequential
    if sequential is None:
        return {s.label: given for s in settings}
    per_partition = given if "seeds" in replicate.model_fields_set else (0,)
    listed = isinstance(replicate.seeds, list) and not any(s.partitioned for s in settings)
    unpartitioned = given if listed else tuple(range(sequential.max_seeds))
    return {s.label: per_partition if s.partitioned else unpartitioned for s in settings}


def check_sequential_seeds(document: Document, replicate: ReplicateSection, settings: list[SamplerSetting]) -> list[Problem]:
    """Under `replicate.sequential`, `replicate.seeds` sets the seeds per partition: without a
    partitioned setting it must be left out, equal max_seeds, or list the max_seeds seeds to run."""
    sequential = replicate.sequential
    given = "seeds" in replicate.model_fields_set
    if sequential is None or not given or any(s.partitioned for s in settings):
        return []
    seeds = replicate.seeds
    if seeds == sequential.max_seeds or (isinstance(seeds, list) and len(seeds) == sequential.max_seeds):
        return []
    message = (
        f"replicate.seeds ({seeds}) is the seeds per partition under replicate.sequential, and no sampler "
        f"setting is partitioned: every arm runs seeds 0..max_seeds-1, so drop seeds, set it to max_seeds "
        f"({sequential.max_seeds}), or list {sequential.max_seeds} seeds for the arms to run instead"
    )
    return [document.problem(message, ("replicate", "seeds"))]


def replicate_partitions(
    document: Document, replicate: ReplicateSection, settings: list[SamplerSetting]
) -> tuple[dict[str, tuple[int, ...]], list[Problem]]:
    """The partitions each sampler setting replicates over.

    Settings without a partitioned sampler use partition 0. `replicate.partitions` narrows the
    partitioned ones: n takes the first n, a list takes those indices.
    """
    at: YamlPath = ("replicate", "partitions")
    chosen = replicate.partitions
    partitioned = [s for s in settings if s.partitions is not None]
    problems = []
    if any(s.partitions > MAX_RUNS for s in partitioned) or (isinstance(chosen, int) and chosen > MAX_RUNS):
        return {}, [document.problem(f"more than {MAX_RUNS:,} partitions: a partition is a training run of every arm", at)]
    if chosen is not None and not partitioned and chosen not in (1, [0]):
        problems.append(
            document.problem("no sampler defines partitions (e.g. low_resource's partitions): remove replicate.partitions", at)
        )
    result = {}
    for setting in settings:
        if setting.partitions is None:
            result[setting.label] = (0,)
            continue
        wanted = range(setting.partitions) if chosen is None else range(chosen) if isinstance(chosen, int) else chosen
        beyond = [p for p in wanted if p >= setting.partitions]
        if beyond:
            message = f"sampler setting {setting.label} defines partitions 0..{setting.partitions - 1}, not {beyond[0]}"
            problems.append(document.problem(message, at))
        result[setting.label] = tuple(wanted)
    return result, problems + check_sequential_units(document, replicate, settings, result)


def check_sequential_units(
    document: Document, replicate: ReplicateSection, settings: list[SamplerSetting], partitions: dict[str, tuple[int, ...]]
) -> list[Problem]:
    """`replicate.sequential.max_seeds` counts partitions of a partitioned setting: it may not ask more than it replicates."""
    sequential = replicate.sequential
    if sequential is None:
        return []
    problems = []
    for setting in settings:
        units = len(partitions.get(setting.label, ()))
        if not setting.partitioned or units >= sequential.max_seeds:
            continue
        narrowed = " or replicate.partitions" if replicate.partitions is not None else ""
        message = (
            f"replicate.sequential.max_seeds {sequential.max_seeds} counts partitions for the partitioned sampler setting "
            f"{setting.label}, which replicates {units}: raise the sampler's partitions{narrowed} to {sequential.max_seeds} "
            "or more (the unit is the partition, seeds within one are not independent)"
        ) + (f", or lower max_seeds to {units}" if units >= MINIMUM_UNITS else "")
        problems.append(document.problem(message, ("replicate", "sequential", "max_seeds")))
    return problems



def check_run_count(
    document: Document,
    datasets: int,
    methods: list[ResolvedMethod],
    partitions: dict[str, tuple[int, ...]],
    seeds: dict[str, tuple[int, ...]],
    tune: Tune | None,
) -> list[Problem]:
    """Refuses plans of more than `MAX_RUNS` runs before they are built; grid trials count as num_samples."""
    per_trial = tune.num_samples if tune is not None else 0
    runs = datasets * sum(
        len(chosen) * len(seeds[label]) + (per_trial if method.space else 0)
        for label, chosen in partitions.items()
        for method in methods
        if method.samplers is None or label in method.samplers
    )
    if runs <= MAX_RUNS:
        return []
    message = f"the plan has {runs:,} training runs, more than {MAX_RUNS:,}: use fewer seeds, partitions, samplers or methods"
    return [document.problem(message, ("replicate",))]
