"""Claims as code: one verdict rule for every paper's claim, computed from the replicates.

A claim (spec `claims:`, `config.experiment.Claim`) says `method - partner` on `metric` lies on one
side of zero (kind superior: the paper's `effect`, or a `direction`) or within a `margin` of it
(kind equivalent). Per claim and setting it matches (dataset, sampler setting, size, and the
encoder/head axes), the paired replicate differences (method - partner, matched by size, seed and
partition) give one row of verdicts.parquet.

Units. Seeds within a partition are not independent (they share its training and test data), so
where the claim's runs span more than one partition the unit is the partition: its paired
differences are averaged, and the tests, intervals and sequential looks count partitions. A paired
t-test on partition means is exact under a random partition effect when every partition has the
same seeds (the means are then independent and equally precise), and it is simple; a mixed model
would add little with the few seeds per partition a design runs. Without partitions the unit is
the seed. Units are ordered by partition index (else seed), the order the looks run them in.

  unit, n_units       partition or seed, and the units the verdict rests on; n_pairs the run pairs
                      behind them
  delta               the mean unit-level difference
  p_value, p_holm     the paired test of the analysis (`analysis.test`) on units (for an equivalent
                      claim the TOST's p, the larger one-sided paired t p), Holm-adjusted over all
                      the report's claims (one family): a fixed design's; a sequential verdict
                      does not read them (p_stagewise)
  p_stagewise         a sequential design's superior claim, once stopped (decided, or its last look
                      taken): the stage-wise ordering p of its look (`boundaries.stagewise_p`), at
                      most the claim's alpha / m exactly when the look decided; null otherwise
  t_stat, boundary_t, the paired t of the units the verdict rests on (delta over its standard error),
  boundary_margin     the critical t of its interval (the look's boundary, or the fixed design's
                      Holm-matched one) and, for a decided row, by how much the interval clears the
                      edge that decided it in t units: |t| - boundary (superior); the nearer
                      one-sided t to the margins minus the boundary (equivalent), the farther
                      (not equivalent); null while inconclusive
  paper_in_interval   the paper's effect lies within the interval (null without an effect): read
                      even where magnitudes are not comparable
  unit_keys,          every unit of the report's runs (partition or seed index) and its difference,
  unit_differences    in unit order, used or not: the claims table (`claims_table`) joins the units
                      of every report serving one registration into one sequence of looks
  ci_low, ci_high     the direction's interval for the mean difference, at the claim's level in
                      that family:
                      fixed design: the t interval at level L = alpha p / p_holm (1 - 2L for an
                      equivalent claim, the TOST's), which decides exactly when p_holm < alpha
                      (Holm's decisions, read as intervals); sequential design
                      (`replicate.sequential`): the repeated confidence interval of the look the
                      claim stopped at, at alpha / m per claim (Bonferroni over the m claims:
                      Holm's step-down needs every p-value at once, which looks taken at different
                      times do not have; for an equivalent claim the two-sided repeated interval,
                      a conservative TOST)
  extrapolation       the claim's `extrapolation` (a setting the paper never ran: why the claim
                      extends to it), null for a claim in a setting the paper ran
  direction_verdict   superior: the interval wholly on the paper's side of zero -> reproduced,
                      wholly on the other -> opposite, else inconclusive (a claim in a setting
                      the paper never ran, `extrapolation` set: extends / does not extend, never
                      reproduced or opposite); equivalent: within
                      (-margin, margin) -> equivalent, wholly beyond one of them -> not equivalent,
                      else inconclusive (`sequential.VerdictRule`)
  magnitude_ci_low,   only for a superior claim with an effect whose setting the spec declares
  magnitude_ci_high   `comparable` (a claim judged on magnitude; else null): delta +- t se', se'
                      combining ours with the paper's standard error (`paper_se`),
                      sqrt(se^2 + paper_se^2), at a fixed level: fixed design 1 - alpha / m', m' the
                      report's claims judged on magnitude (Bonferroni; the direction's Holm-matched
                      level depends on the claim's own p, so it has no coverage of its own);
                      sequential design the critical t of the look's repeated interval (alpha / m)
  magnitude_verdict   that interval against the paper's effect: wholly on zero's side of the
                      effect -> smaller, wholly beyond it -> larger; containing the effect and
                      within [0, 2 effect] (ours between none and twice the paper's) -> consistent;
                      otherwise inconclusive (too wide to say); "not comparable" where not judged.
                      Gated like verdict: inconclusive when not converged (the interval stays)
  converged           every run behind the pairs has `converged_run` True (stopped by patience or
                      a converged fit); null when some run does not say
  verdict             direction_verdict when converged, else inconclusive
  units_needed        units for power 0.8 at the claim's alpha / m: at the paper's effect (a
                      direction only: at delta; equivalent: at the margin, true difference 0) with
                      the observed sd of the unit-level differences (`sequential.units_for_power`)
  units_needed_at     what units_needed assumes: "paper's effect", "observed difference" (a
                      direction only: post hoc, it restates the p-value; shown so every undecided
                      claim has a size to plan from) or "margin"; null when the sd is unknown;
                      set with units_needed null: more than MAX_PAIRS units (a difference of
                      about 0 or far below the sd)
  power               the fixed design's power at max units (the design's max_seeds, else the
                      units there are) at the paper's effect (equivalent: the TOST's at 0) with
                      that sd; null for a direction only
  p_vs_paper          Welch-type test of delta = the paper's effect, as information: (delta - effect)
                      over sqrt(se^2 + paper_se^2), on the units' n - 1 degrees of freedom (the
                      paper's run count is not given; taking its se as exact, Welch's would be at
                      least that many); null without a `paper_se` (a single-run effect has no error
                      to test against)
  aso_eps_min,        Almost Stochastic Order (Dror et al. 2019, via `deepsig`) on units: eps_min of
  aso_eps_min_reverse method over partner and of partner over method, as information
  tuning columns      both arms' tune trials, searched keys and epochs (the cap): the effort each
                      side got; method_epochs_trained and partner_epochs_trained the mean epochs
                      the replicates behind the verdict trained (`stopped_epoch`), null where unrecorded
  cpu_hours           reserved CPU-hours (GPU-hours in gpu_hours) of both arms' tune trials and of
                      the replicates the verdict rests on

`best_other` as partner is the other method with the best mean dev score in the setting
(`compare.best_other_choice`); under a sequential design it is chosen on the runs of the first
look's units only and kept for later looks (`partner_chosen_at`), so one design compares one pair.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from nerplat.analysis.boundaries import SequentialDesign, boundaries, stagewise_p
from nerplat.analysis.compare import best_other_choice, paired_values
from nerplat.analysis.sequential import (
    VerdictRule,
    decide,
    design_power,
    equivalence_power,
    equivalence_units,
    look_schedule,
    units_for_power,
)
from nerplat.analysis.settings import AnalysisSettings
from nerplat.analysis.stats import holm, paired_test
from nerplat.analysis.verdict_context import ARM_SCHEMA, aso_eps_min, reserved_hours, tuning
from nerplat.config.experiment import BEST_OTHER, Claim, Sequential

SETTING_COLUMNS = ("dataset", "sampler", "size")
SCHEMA = {
    "claim": pl.String(), "paper": pl.String(), "source": pl.String(), "kind": pl.String(), "method": pl.String(),
    "partner": pl.String(), "partner_chosen_at": pl.String(), "metric": pl.String(), "dataset": pl.String(),
    "sampler": pl.String(), "size": pl.Int64(), "paper_effect": pl.Float64(), "direction": pl.String(), "delta": pl.Float64(),
    "ci_low": pl.Float64(), "ci_high": pl.Float64(), "ci_level": pl.Float64(), "p_value": pl.Float64(), "p_holm": pl.Float64(),
    "p_vs_paper": pl.Float64(), "unit": pl.String(),
    "n_units": pl.Int64(), "n_pairs": pl.Int64(), "converged": pl.Boolean(), "direction_verdict": pl.String(),
    "magnitude_verdict": pl.String(), "magnitude_ci_low": pl.Float64(), "magnitude_ci_high": pl.Float64(), "verdict": pl.String(),
    "units_needed": pl.Int64(), "units_needed_at": pl.String(), "power": pl.Float64(), "design": pl.String(),
    "looks_taken": pl.Int64(), "decided_look": pl.Int64(), "aso_eps_min": pl.Float64(), "aso_eps_min_reverse": pl.Float64(),
    "method_trials": pl.Int64(), "partner_trials": pl.Int64(), "method_searched": pl.String(), "partner_searched": pl.String(),
    "method_epochs": pl.Int64(), "partner_epochs": pl.Int64(), "cpu_hours": pl.Float64(), "gpu_hours": pl.Float64(),
    "arms": pl.List(pl.String()), "note": pl.String(), "extrapolation": pl.String(),
    "t_stat": pl.Float64(), "boundary_t": pl.Float64(), "boundary_margin": pl.Float64(), "p_stagewise": pl.Float64(),
    "paper_in_interval": pl.Boolean(), "method_epochs_trained": pl.Float64(), "partner_epochs_trained": pl.Float64(),
    "unit_keys": pl.List(pl.Int64()), "unit_differences": pl.List(pl.Float64()),
    # filled by analysis/evidence.py (the registrations' contract), null until then
    "registration": pl.String(), "evidence": pl.String(), "evidence_reason": pl.String(), "first_test_at": pl.String(),
}
VERDICT_COLUMNS = tuple(SCHEMA)


@dataclass(frozen=True)
class _Side:
    """The unit-level values of one claim in one setting: method means `a`, partner means `b`, in unit order."""

    claim: Claim
    partner: str
    partner_chosen_at: str | None  # best_other: the runs the partner was chosen on
    setting: dict[str, Any]  # the method's cell: dataset, sampler and axes
    method_arms: list[str]
    partner_arms: list[str]
    unit: str  # "partition" or "seed"
    a: np.ndarray
    b: np.ndarray
    pairs: np.ndarray  # run pairs per unit
    runs: tuple[tuple[str, ...], ...]  # per unit, the run ids of its pairs (both sides)
    keys: np.ndarray  # per unit, its partition or seed index

    @property
    def arms(self) -> list[str]:
        """The arms the verdict reads (and a sequential design still needs while it is undecided)."""
        return sorted({*self.method_arms, *self.partner_arms})

    @property
    def rule(self) -> VerdictRule:
        claim = self.claim
        if claim.kind == "equivalent":
            return VerdictRule(margin=claim.margin)
        return VerdictRule(side=claim.side, extrapolation=bool(claim.extrapolation))


def claim_looks(sequential: Sequential) -> tuple[int, ...]:
    """The unit counts a claim is looked at (partitions for partitioned arms, else seeds): every
    `look_every` units from the first look with MINIMUM_PAIRS on, and max_seeds last. The
    replicate phase runs the units these need (`run.looks`); the analysis judges at them."""
    return look_schedule(sequential.max_seeds, sequential.look_every)


def claim_design(settings: AnalysisSettings, family_size: int) -> SequentialDesign | None:
    """The group-sequential design of one claim: its looks (`claim_looks`), at alpha / m."""
    sequential = settings.sequential
    if sequential is None:
        return None
    looks = claim_looks(sequential)
    return boundaries(looks, looks[-1], settings.alpha / max(family_size, 1), sequential.spending)


def verdicts(
    replicates: pl.DataFrame,
    settings: AnalysisSettings,
    axes: Sequence[str] = (),
    arms: pl.DataFrame | None = None,
    trials: pl.DataFrame | None = None,
    aso: bool = True,
) -> pl.DataFrame:
    """One row per claim and matching setting (module docstring); empty without claims.

    `replicates` are usable replicate runs (with `converged_run` where known), `arms` the plan's
    arms (`verdict_context.arm_frame`), `trials` the tune trials (for their cost).
    """
    sides = [side for claim in settings.claims for side in claim_sides(replicates, claim, settings, axes)]
    if not sides:
        return pl.DataFrame(schema=SCHEMA)
    p_values = np.array([_p_value(side, settings) for side in sides])
    adjusted = holm(p_values)
    arms = arms if arms is not None else pl.DataFrame(schema=ARM_SCHEMA)
    design = claim_design(settings, len(sides))
    claim_alpha = settings.alpha / len(sides)
    magnitude_alpha = settings.alpha / max(sum(_judged_on_magnitude(side.claim) for side in sides), 1)
    rows = []
    for side, p, p_holm in zip(sides, p_values, adjusted):
        row, critical = _interval(side, p, p_holm, design, settings.alpha, magnitude_alpha)
        used = row["n_units"]
        runs = [run for unit in side.runs[:used] for run in unit]
        row["n_pairs"] = int(side.pairs[:used].sum())
        row["arms"] = side.arms
        row |= tuning(side.method_arms, side.partner_arms, arms)
        finite = row["ci_low"] is not None and row["ci_high"] is not None
        row["direction_verdict"] = side.rule.verdict(row["ci_low"], row["ci_high"]) if finite else "inconclusive"
        row["boundary_margin"] = _boundary_margin(side.rule, row["direction_verdict"], side.a[:used] - side.b[:used],
                                                  row["boundary_t"])
        row["paper_in_interval"] = (
            bool(row["ci_low"] <= side.claim.effect <= row["ci_high"]) if finite and side.claim.effect is not None else None
        )
        row |= _epochs_trained(replicates, side.runs[:used])
        row |= {"unit_keys": [int(k) for k in side.keys], "unit_differences": (side.a - side.b).tolist()}
        row["converged"] = _converged(replicates, runs)
        row["verdict"] = row["direction_verdict"] if row["converged"] else "inconclusive"
        row |= _magnitude(side.claim, side.a[:used] - side.b[:used], critical)
        if not row["converged"] and row["magnitude_verdict"] != "not comparable":
            row["magnitude_verdict"] = "inconclusive"
        max_units = settings.sequential.max_seeds if settings.sequential is not None else side.a.size
        row |= _power(side.claim, side.a[:used] - side.b[:used], max_units, claim_alpha)
        row |= aso_eps_min(side.a[:used], side.b[:used], settings.alpha, len(sides)) if aso else {}
        row |= reserved_hours(replicates, trials, arms, side.arms, runs)
        rows.append(_identity(side, settings) | row)
    return pl.DataFrame(rows, schema=SCHEMA)


def claim_sides(replicates: pl.DataFrame, claim: Claim, settings: AnalysisSettings, axes: Sequence[str]) -> list[_Side]:
    """The claim's unit-level values in each setting it covers, paired as its verdict reads them:
    `verdicts` judges them, `claim_design.pilot_sds` takes a pilot sd from them."""
    metric = settings.claim_metric(claim)
    if metric not in replicates.columns:
        return []
    if claim.partner_sampler is not None:
        return _sampler_sides(replicates, claim, metric, axes)
    frame = replicates
    where = claim.where
    for column, value in (("dataset", where.dataset), ("sampler_label", where.sampler), ("size", where.size)):
        if value is not None:
            frame = frame.filter(pl.col(column) == value)
    if frame.is_empty():
        return []
    if claim.partner == BEST_OTHER:
        chosen_at = "all units" if settings.sequential is None else "first look"
        looked = frame if settings.sequential is None else _first_look(frame, claim_looks(settings.sequential)[0], axes)
        average = "macro" if "macro" in claim.metric else "micro"  # the dev score runs log (span level)
        choices = best_other_choice(looked, claim.method, f"dev_best_{average}_f1", axes)
        partners = [(row["partner"], {k: row[k] for k in ("dataset", "sampler", *axes)}) for row in choices.iter_rows(named=True)]
    else:
        chosen_at, partners = None, [(claim.partner, None)]
    sides = []
    for partner, only in partners:
        part = frame if only is None else frame.filter(*(pl.col(k).eq_missing(v) for k, v in only.items()))
        for row in paired_values(part, claim.method, partner, metric, axes).iter_rows(named=True):
            setting = {k: row[k] for k in ("dataset", "sampler", *axes)}
            in_setting = frame.filter(*(pl.col(k).eq_missing(v) for k, v in setting.items()))
            own, other = (sorted(in_setting.filter(pl.col("method") == m)["arm"].drop_nulls().unique().to_list())
                          for m in (claim.method, partner))
            sides.append(_units(claim, partner, chosen_at, setting, own, other, row))
    return sides


def _first_look(frame: pl.DataFrame, units: int, axes: Sequence[str]) -> pl.DataFrame:
    """The runs of the first `units` units of each setting: partitions where its runs have more than
    one, else seeds (in index order, as the looks run them)."""
    within = ["dataset", "sampler", *axes]
    partitioned = pl.col("partition").drop_nulls().n_unique().over(within) > 1
    unit = pl.when(partitioned).then(pl.col("partition")).otherwise(pl.col("seed"))
    return frame.filter(unit.rank("dense").over(within) <= units)


def _sampler_sides(replicates: pl.DataFrame, claim: Claim, metric: str, axes: Sequence[str]) -> list[_Side]:
    """A claim across sampler settings: the method at `where.sampler` against the partner at
    `partner_sampler`, paired by dataset, seed and partition (resampling changes the size)."""
    where = claim.where
    frame = replicates if where.dataset is None else replicates.filter(pl.col("dataset") == where.dataset)
    mine = frame.filter(pl.col("method") == claim.method, pl.col("sampler_label") == where.sampler)
    theirs = frame.filter(pl.col("method") == claim.partner, pl.col("sampler_label") == claim.partner_sampler)
    if mine.is_empty() or theirs.is_empty():
        return []
    marked = pl.concat([mine.with_columns(pl.lit("a").alias("method")), theirs.with_columns(pl.lit("b").alias("method"))],
                       how="diagonal_relaxed")
    marked = marked.with_columns(pl.lit(where.sampler).alias("sampler"), pl.lit(None, pl.Int64).alias("size"))
    own, other = (sorted(set(part["arm"].drop_nulls().to_list())) for part in (mine, theirs))
    sides = []
    for row in paired_values(marked, "a", "b", metric, axes).iter_rows(named=True):
        setting = {"dataset": row["dataset"], "sampler": mine["sampler"][0], **{a: row[a] for a in axes}}
        sides.append(_units(claim, claim.partner, None, setting, own, other, row))
    return sides


def _units(claim: Claim, partner: str, chosen_at: str | None, setting: dict[str, Any], own: list[str], other: list[str],
           row: dict[str, Any]) -> _Side:
    """One side from a `paired_values` row: its pairs averaged within partition where they span more
    than one partition, else one unit per pair (seed order)."""
    a, b = np.asarray(row["a"], dtype=float), np.asarray(row["b"], dtype=float)
    partitions = [p for p in row["partition"] if p is not None]
    unit = "partition" if len(set(partitions)) > 1 else "seed"
    keys = np.asarray(row["partition"] if unit == "partition" else row["seed"])
    order = np.argsort(keys, kind="stable")  # pairs come sorted by size, seed and partition
    keys, a, b = keys[order], a[order], b[order]
    run_ids = [(row["a_run"][i], row["b_run"][i]) for i in order]
    values, index, counts = np.unique(keys, return_inverse=True, return_counts=True)
    runs = tuple(tuple(run for i in np.flatnonzero(index == k) for run in run_ids[i]) for k in range(values.size))
    return _Side(claim, partner, chosen_at, setting, own, other, unit,
                 np.bincount(index, a, values.size) / counts, np.bincount(index, b, values.size) / counts, counts, runs, values)


def _p_value(side: _Side, settings: AnalysisSettings) -> float:
    """The claim's p over its units: the paired test, or for an equivalent claim the TOST's."""
    if side.a.size < 2:
        return math.nan
    if side.claim.kind == "equivalent":
        from scipy import stats

        d = side.a - side.b
        with np.errstate(invalid="ignore", divide="ignore"):
            se = d.std(ddof=1) / math.sqrt(d.size)
            lower = stats.t.sf((d.mean() + side.claim.margin) / se, d.size - 1)
            upper = stats.t.cdf((d.mean() - side.claim.margin) / se, d.size - 1)
        return float(max(lower, upper))
    return float(paired_test(side.a[None, :], side.b[None, :], settings.test)[1][0])


def _interval(side: _Side, p: float, p_holm: float, design: SequentialDesign | None, alpha: float,
              magnitude_alpha: float) -> tuple[dict[str, Any], float]:
    """delta, its interval and test against the paper over the units the verdict rests on, and the
    critical t of the magnitude interval (the look's under a sequential design, else at
    1 - magnitude_alpha)."""
    from scipy import stats

    d = side.a - side.b
    row: dict[str, Any] = {"p_value": _finite(p), "p_holm": _finite(p_holm), "looks_taken": None, "decided_look": None,
                           "unit": side.unit, "p_stagewise": None}
    if design is not None and d.size >= design.looks[0]:
        decision = decide(d, side.rule, design)
        last = decision.looks[-1]
        used, critical = last.pairs, design.critical_t[last.index]
        row |= {"ci_low": last.ci_low, "ci_high": last.ci_high, "ci_level": 1 - last.nominal_alpha,
                "looks_taken": len(decision.looks), "decided_look": decision.decided_look,
                "design": f"sequential ({design.spending}, looks at {list(design.looks)} {side.unit}s)"}
        stopped = decision.decided_look is not None or last.index == len(design.looks) - 1
        if stopped and side.claim.kind == "superior":
            row["p_stagewise"] = _finite(stagewise_p(design, last.index, _t_stat(d[:used])))
        row["boundary_t"] = _finite(critical)
    else:
        used = d.size
        level = alpha * p / p_holm if (np.isfinite(p) and np.isfinite(p_holm) and p_holm > 0) else alpha
        tail = level if side.claim.kind == "equivalent" else level / 2  # the TOST's interval is at 1 - 2 level
        critical = float(stats.t.isf(tail, used - 1)) if used >= 2 else math.nan
        half = math.nan
        if used >= 2:
            with np.errstate(invalid="ignore", divide="ignore"):
                half = critical * d.std(ddof=1) / math.sqrt(used)
        mean = d.mean() if used else math.nan
        row |= {"ci_low": mean - half, "ci_high": mean + half, "ci_level": 1 - 2 * tail, "design": "fixed",
                "boundary_t": _finite(critical)}
        critical = float(stats.t.isf(magnitude_alpha / 2, used - 1)) if used >= 2 else math.nan
    kept = d[:used]
    row["delta"] = float(kept.mean()) if used else None
    row["t_stat"] = _finite(_t_stat(kept))
    row["n_units"] = int(used)
    row["p_vs_paper"] = _p_vs_paper(side.claim, kept)
    row["ci_low"], row["ci_high"] = _finite(row["ci_low"]), _finite(row["ci_high"])
    return row, critical


def _p_vs_paper(claim: Claim, d: np.ndarray) -> float | None:
    """Welch-type test of delta = the paper's effect (module docstring); None without a paper_se."""
    if d.size < 2 or claim.kind != "superior" or claim.effect is None or claim.paper_se is None:
        return None
    from scipy import stats

    t = (d.mean() - claim.effect) / math.hypot(d.std(ddof=1) / math.sqrt(d.size), claim.paper_se)
    return float(2 * stats.t.sf(abs(t), d.size - 1))


def _t_stat(d: np.ndarray) -> float:
    """The paired t of unit-level differences: their mean over its standard error (NaN under 2 units or no spread)."""
    if d.size < 2:
        return math.nan
    with np.errstate(invalid="ignore", divide="ignore"):
        return float(d.mean() / (d.std(ddof=1) / math.sqrt(d.size)))


def _boundary_margin(rule: VerdictRule, verdict: str, d: np.ndarray, boundary: float | None) -> float | None:
    """By how much a decided interval clears the edge that decided it, in t units (module docstring)."""
    t = _t_stat(d)
    if verdict == "inconclusive" or boundary is None or not math.isfinite(t):
        return None
    if rule.margin is None:
        return _finite(abs(t) - boundary)
    se = float(d.std(ddof=1)) / math.sqrt(d.size)
    to_upper, to_lower = (rule.margin - d.mean()) / se, (d.mean() + rule.margin) / se  # positive inside the band
    nearer = min(to_upper, to_lower) if verdict == "equivalent" else max(-to_upper, -to_lower)
    return _finite(nearer - boundary)


def _epochs_trained(replicates: pl.DataFrame, runs: Sequence[tuple[str, ...]]) -> dict[str, float | None]:
    """Mean epochs the method's and the partner's replicates trained (`stopped_epoch`); each unit's
    runs alternate method, partner (`_units`)."""
    found: dict[str, float | None] = {"method_epochs_trained": None, "partner_epochs_trained": None}
    if "stopped_epoch" not in replicates.columns:
        return found
    for key, offset in (("method_epochs_trained", 0), ("partner_epochs_trained", 1)):
        ids = [run for unit in runs for run in unit[offset::2]]
        found[key] = _finite(replicates.filter(pl.col("run_id").is_in(ids))["stopped_epoch"].cast(pl.Float64).mean())
    return found


def _finite(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)


def _judged_on_magnitude(claim: Claim) -> bool:
    return claim.kind == "superior" and claim.effect is not None and bool(claim.comparable)


def _magnitude(claim: Claim, d: np.ndarray, critical: float) -> dict[str, Any]:
    """The magnitude interval and verdict (module docstring) from the unit-level differences `d`:
    ours against the paper's effect, both uncertain."""
    row: dict[str, Any] = {"magnitude_ci_low": None, "magnitude_ci_high": None}
    if not _judged_on_magnitude(claim):
        return row | {"magnitude_verdict": "not comparable"}
    if d.size < 2 or not math.isfinite(critical):
        return row | {"magnitude_verdict": "inconclusive"}
    delta = float(d.mean())
    spread = critical * math.hypot(float(d.std(ddof=1)) / math.sqrt(d.size), claim.paper_se or 0.0)
    row = {"magnitude_ci_low": delta - spread, "magnitude_ci_high": delta + spread}
    low, high = delta - claim.effect - spread, delta - claim.effect + spread
    if low > 0 or high < 0:
        return row | {"magnitude_verdict": "larger" if (low > 0) == (claim.effect > 0) else "smaller"}
    consistent = -abs(claim.effect) <= low and high <= abs(claim.effect)
    return row | {"magnitude_verdict": "consistent" if consistent else "inconclusive"}


def _power(claim: Claim, d: np.ndarray, max_units: int, alpha: float) -> dict[str, Any]:
    """units_needed and power (module docstring) from the observed sd of the unit-level differences."""
    sd = float(d.std(ddof=1)) if d.size >= 2 else math.nan
    if claim.kind == "equivalent":
        at, needed, power = (
            "margin", equivalence_units(claim.margin, sd, alpha), equivalence_power(claim.margin, sd, max_units, alpha)
        )
    elif claim.effect is not None:
        at, needed, power = (
            "paper's effect", units_for_power(claim.effect, sd, alpha), design_power(claim.effect, sd, max_units, alpha)
        )
    else:
        at, needed, power = "observed difference", units_for_power(float(d.mean()) if d.size else math.nan, sd, alpha), math.nan
    known = not math.isnan(needed)
    beyond = not known and math.isfinite(sd) and sd > 0  # units_for_power's NaN past MAX_PAIRS or at no difference
    return {"units_needed": int(needed) if known else None, "units_needed_at": at if known or beyond else None,
            "power": _finite(power)}


def _converged(replicates: pl.DataFrame, runs: list[str]) -> bool | None:
    """Every run behind the pairs converged (`converged_run`); False when one did not, None when
    some run does not say (or the frame predates the column)."""
    if "converged_run" not in replicates.columns or not runs:
        return None
    flags = replicates.filter(pl.col("run_id").is_in(runs))["converged_run"]
    if flags.not_().any():
        return False
    if flags.len() < len(set(runs)) or flags.null_count():
        return None
    return True


def _identity(side: _Side, settings: AnalysisSettings) -> dict[str, Any]:
    claim = side.claim
    stated = f"on par (±{claim.margin:g})" if claim.kind == "equivalent" else ("better" if claim.side > 0 else "worse")
    return {
        "claim": claim.id, "paper": claim.paper, "source": claim.source, "kind": claim.kind, "method": claim.method,
        "partner": side.partner, "partner_chosen_at": side.partner_chosen_at, "metric": settings.claim_metric(claim),
        "dataset": side.setting["dataset"], "sampler": side.setting["sampler"], "size": claim.where.size,
        "paper_effect": claim.effect, "direction": stated, "note": claim.note, "extrapolation": claim.extrapolation or None,
    }
