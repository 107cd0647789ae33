"""Experiment-wide settings a spec gives and a plan carries: resources per trial, the tune phase, the analysis."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from nerplat.config.frozen import Frozen
from nerplat.config.trial import Component


class Resources(Frozen):
    """What one trial asks Ray for."""

    workers: int = Field(1, ge=1, description="Ray Train workers per trial (data-parallel).")
    cpus_per_worker: float = Field(1.0, gt=0, allow_inf_nan=False, description="CPUs reserved by each worker.")
    gpus_per_worker: float = Field(0.0, ge=0, allow_inf_nan=False, description="GPUs reserved by each worker (fractions share a GPU).")
    custom: dict[str, Annotated[float, Field(ge=0, allow_inf_nan=False)]] = Field(
        default_factory=dict, description="Custom Ray resources per worker, e.g. {accelerator_type:A100: 0.01}."
    )
    max_retries: int = Field(0, ge=0, description="Times a failed trial is restarted before it counts as failed.")


class Tune(Frozen):
    """How the tune phase searches each arm's space on dev."""

    searcher: Component = Field(description="Searcher name and options (registry `searchers`).")
    scheduler: Component = Field(description="Trial scheduler name and options (registry `schedulers`).")
    metric: str = Field(description="Dev metric the searcher and scheduler optimise, e.g. dev_micro_f1.")
    mode: Literal["max", "min"] = Field(description="Whether the metric is maximised or minimised.")
    num_samples: int = Field(ge=1, description="Trials per arm for tpe/random; grid runs every grid point.")
    max_concurrent: int | None = Field(description="Trials of one arm running at once; none: as many as resources allow.")
    time_budget_s: float | None = Field(
        None, gt=0, description="Seconds an arm's tune phase may take (Ray's TuneConfig.time_budget_s); then its trials stop."
    )


class Analysis(Frozen):
    """Which comparisons the analysis stage tests, and how."""

    baseline: str | None = Field(None, description="Method every other method is compared with.")
    test: Literal["paired_t", "wilcoxon"] = Field("paired_t", description="Paired significance test over replicates.")
    alpha: float = Field(0.05, gt=0, lt=1, description="Significance level.")
    comparisons: tuple[tuple[str, str], ...] = Field((), description="Extra [method, method] pairs to test.")
    against_best: tuple[str, ...] = Field(
        (),
        description="Methods tested against the best other method, chosen per setting from the results: "
        "the highest mean dev score of the replicates (Nemoto et al. 2024's 'best other method').",
    )
    bootstrap_resamples: int = Field(1000, ge=100, description="Resamples of the bootstrapped standard error.")
    confidence: float = Field(0.95, gt=0, lt=1, description="Coverage of the bootstrap percentile intervals.")
    seed: int = Field(0, ge=0, description="Seed of the bootstrap: same seed, same numbers.")
    average: Literal["micro", "macro"] = Field("micro", description="Averaging over types of the headline precision, recall and F1.")
    reference_sampler: str | None = Field(
        None, description="Sampler setting (label) whose runs start the precision-recall arrows; none: each setting's baseline."
    )
