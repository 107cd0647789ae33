"""Experiment-wide settings a spec gives and a plan carries: resources per trial, the tune phase, the analysis."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from nerplat.config.frozen import Frozen
from nerplat.config.trial import Component

TUNE_SEED = 2**31 - 1  # the seed tuning trials train with unless a plan says otherwise; never a replicate seed


class Resources(Frozen):
    """What one trial asks Ray for."""

    workers: int = Field(1, ge=1, description="Ray Train workers per trial (data-parallel).")
    cpus_per_worker: float = Field(1.0, gt=0, allow_inf_nan=False, description="CPUs reserved by each worker.")
    gpus_per_worker: float = Field(
        0.0, ge=0, allow_inf_nan=False, description="GPUs reserved by each worker (fractions share a GPU)."
    )
    custom: dict[str, Annotated[float, Field(ge=0, allow_inf_nan=False)]] = Field(
        default_factory=dict, description="Custom Ray resources per worker, e.g. {accelerator_type:A100: 0.01}."
    )
    max_retries: int = Field(0, ge=0, le=100, description="Times a failed trial is restarted before it counts as failed.")


DEFAULT_TUNE_METRIC = "dev_micro_f1"  # also what runs select on without a tune section (`Plan.select_metric`)


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
    seed: int = Field(0, ge=0, description="Seed the arms' searcher seeds derive from (run.search.searcher_seed).")
    train_seed: int = Field(
        TUNE_SEED, ge=0, description="Seed every tuning trial trains with (`nerplat bench peer` varies it per repeat)."
    )
    enqueue: dict[str, tuple[dict[str, Any], ...]] = Field(
        default_factory=dict,
        description="Starting points per method, keyed by dotted search-space paths (objective.lambda): "
        "each runs once before the searcher draws.",
    )


BEST_OTHER = "best_other"  # a claim's partner chosen on dev from the results, per setting
ClaimMetric = Literal[
    "micro_f1", "macro_f1", "micro_precision", "macro_precision", "micro_recall", "macro_recall", "token_micro_f1",
    "token_macro_f1", "conlleval_micro_f1", "fixed_threshold_conlleval_micro_f1",
]


class ClaimWhere(Frozen):
    """Where in the plan a claim is tested: the runs of one dataset, sampler setting and size."""

    dataset: str | None = Field(None, description="Dataset label, as in arm ids.")
    sampler: str | None = Field(None, description="Sampler setting label, as in arm ids.")
    size: int | None = Field(None, ge=1, description="Training size the runs were tagged with.")


class Claim(Frozen):
    """A paper's claim as the paper states it: `method` beats (or trails) `partner` on `metric`
    (kind superior, by `effect` or in a `direction`), or the two are on par (kind equivalent, within
    `margin`).

    The analysis turns each into a row of verdicts.parquet by one rule (nerplat.analysis.verdicts):
    a direction verdict for a superior claim (an equivalence verdict for an equivalent one) and,
    where the setting is declared `comparable` to the paper's, a magnitude verdict.
    """

    id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$", max_length=64, description="Name of the claim in tables.")
    paper: str = Field(
        min_length=1, description="Where the claim comes from: authors, year and place, e.g. 'Nemoto et al. 2024, Table 3'."
    )
    source: str = Field(
        description="Where the paper states it, to check it against: 'Table 3', 'Fig. 2', \"sec. V.B, 'on par'\"."
    )
    kind: Literal["superior", "equivalent"] = Field(
        "superior", description="superior: method - partner is on one side of zero (effect or direction); "
        "equivalent: the paper says the two are on par or not significantly different (a TOST at `margin`)."
    )
    method: str = Field(description="The method the claim is about.")
    partner: str = Field(
        description=f"The method it is compared with, or {BEST_OTHER}: the other method with the best mean dev score."
    )
    metric: ClaimMetric = Field(
        description="micro_f1, macro_f1, micro_precision, ... (strict span level), conlleval_micro_f1 (lenient span level, "
        "seqeval's default mode), token_micro_f1, token_macro_f1 or, between methods whose heads decide by a "
        "threshold, fixed_threshold_conlleval_micro_f1 (at the head's configured threshold, not the one chosen on dev) "
        "on the replicates' split: the one the paper reports."
    )
    effect: float | None = Field(
        None, allow_inf_nan=False,
        description="The paper's difference method - partner, in the report's units (F1 as a fraction, so |effect| <= 1); "
        "for kind equivalent the paper's observed difference, shown only."
    )
    direction: Literal["better", "worse"] | None = Field(
        None,
        description="For a paper that gives no number (a figure, a sentence): the method is better or worse than its partner.",
    )
    margin: float | None = Field(
        None, gt=0, allow_inf_nan=False, description="kind equivalent: the equivalence margin, in the metric's units; "
        "|method - partner| below it counts as on par."
    )
    comparable: str = Field(
        "", description="Why our setting is comparable to the paper's (data, size, encoder): then the size of the effect "
        "is judged (magnitude verdict); empty: the magnitude is 'not comparable'."
    )
    paper_se: float | None = Field(
        None, gt=0, allow_inf_nan=False, description="The paper's standard error of its effect, where it prints one: "
        "the magnitude verdict counts the paper's uncertainty with ours."
    )
    pilot_sd: float | None = Field(
        None, gt=0, allow_inf_nan=False, description="Standard deviation of the unit-level paired differences from a pilot: "
        "`nerplat plan` sizes the design with it."
    )
    partner_sampler: str | None = Field(
        None, description="For a claim across sampler settings (sC vs the original data): the partner's sampler setting label; "
        "the method's is where.sampler."
    )
    where: ClaimWhere = Field(
        ClaimWhere(), description="The dataset, sampler setting and size the claim is tested at; default: every setting."
    )
    note: str = Field("", description="Where the paper's number comes from when it is not printed (e.g. read off a figure).")
    extrapolation: str = Field(
        "", description="Where the paper never ran this claim's setting: what the claim extends and from where, in a line "
        "('the paper ran MRC on full data only'). Its verdict then reads extends or does not extend, never reproduced or "
        "opposite: a setting the paper did not run cannot contradict it."
    )
    unequal_effort: str = Field(
        "", description="Why the compared arms get unequal tuning effort (e.g. the paper's own protocol); "
        "without it `validate` warns."
    )

    @field_validator("source")
    @classmethod
    def _source_named(cls, value: str) -> str:
        if not value.strip():
            raise ValueError(
                "name where the paper states the claim: a table ('Table 3'), a figure ('Fig. 2') or a section and quote"
            )
        return value

    @model_validator(mode="after")
    def _stated_as_its_kind(self) -> "Claim":
        if self.kind == "equivalent":
            if self.margin is None:
                raise ValueError(
                    "a claim of kind equivalent needs a margin: the largest |method - partner| that counts as on par"
                )
            if self.direction is not None:
                raise ValueError("a claim of kind equivalent has no direction; give kind superior for a better/worse claim")
            return self
        if self.margin is not None:
            raise ValueError("margin is the equivalence margin of kind equivalent; a superior claim is judged against zero")
        if (self.effect is None) == (self.direction is None):
            raise ValueError("give the paper's effect (a number), or only its direction (better or worse) when it prints none")
        if self.effect == 0:
            raise ValueError("an effect of 0 claims no superiority: give kind equivalent with a margin for 'on par'")
        if self.paper_se is not None and self.effect is None:
            raise ValueError("paper_se is the standard error of the paper's effect: give the effect too")
        if self.extrapolation and self.comparable:
            raise ValueError(
                "a claim is an extrapolation (a setting the paper did not run) or comparable to the paper's setting, not both"
            )
        return self

    @model_validator(mode="after")
    def _samplers_named(self) -> "Claim":
        if self.partner_sampler is not None and (self.where.sampler is None or self.partner == BEST_OTHER):
            raise ValueError(
                "a claim across sampler settings names the method's (where.sampler) and a partner method, not best_other"
            )
        return self

    @property
    def side(self) -> int:
        """The side of zero a superior claim puts method - partner on: +1 or -1 (0 for kind equivalent)."""
        if self.kind == "equivalent":
            return 0
        if self.effect is not None:
            return 1 if self.effect > 0 else -1
        return 1 if self.direction == "better" else -1

    @field_validator("effect", mode="before")
    @classmethod
    def _number(cls, value: Any) -> Any:
        if isinstance(value, bool):  # pydantic reads true as 1.0
            raise ValueError(f"expected a number, not {str(value).lower()}")
        return value

    @field_validator("effect", "margin", "paper_se", "pilot_sd")
    @classmethod
    def _a_fraction(cls, value: float | None) -> float | None:
        if value is not None and abs(value) > 1:
            raise ValueError(
                f"{value:g} is beyond ±1, but F1 and the other metrics are fractions (0.85, not 85): write 2 points as 0.02"
            )
        return value


FIRST_LOOK_UNITS = 3  # `analysis.sequential.MINIMUM_PAIRS`, which the config layer may not import


class Sequential(Frozen):
    """A group-sequential replication design: units are added in looks until every claim is decided.

    A unit is a partition for an arm whose sampler has partitions (every seed of it), else a seed
    (nerplat.analysis.verdicts, `claim_looks`).
    """

    max_seeds: int = Field(
        le=1000,
        description="Units at most: partitions of a partitioned arm, else seeds (the plan holds them all; looks run a "
        f"prefix). At least {FIRST_LOOK_UNITS}, the first look's units.",
    )
    look_every: int = Field(ge=1, description="Units (partitions, else seeds) added between two looks.")
    spending: Literal["obrien_fleming", "pocock"] = Field(
        "obrien_fleming", description="Lan-DeMets alpha-spending function over the looks."
    )

    @field_validator("max_seeds")
    @classmethod
    def _reaches_the_first_look(cls, value: int) -> int:
        if value < FIRST_LOOK_UNITS:
            raise ValueError(
                f"max_seeds {value}: the first look needs {FIRST_LOOK_UNITS} units (a t interval on 2 degrees of "
                f"freedom); raise max_seeds to {FIRST_LOOK_UNITS} or more"
            )
        return value


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
    bootstrap_resamples: int = Field(
        1000, ge=100, le=1_000_000, description="Resamples of the bootstrapped standard error."
    )
    confidence: float = Field(0.95, gt=0, lt=1, description="Coverage of the bootstrap percentile intervals.")
    seed: int = Field(0, ge=0, description="Seed of the bootstrap: same seed, same numbers.")
    average: Literal["micro", "macro"] = Field(
        "micro", description="Averaging over types of the headline precision, recall and F1."
    )
    reference_sampler: str | None = Field(
        None, description="Sampler setting (label) whose runs start the precision-recall arrows; none: each setting's baseline."
    )
    decimals: int = Field(4, ge=1, le=8, description="Decimals of the report's scores (tables, headline table).")
