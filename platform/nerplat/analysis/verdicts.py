"""Claims as code: one verdict rule for every paper's claim, computed from the replicates.

A claim (spec `claims:`) says `method - partner` on `metric` is `effect` in the paper. Per claim
and setting it matches (dataset, sampler setting, size, and the encoder/head axes), the paired
replicate differences d (method - partner, matched by size, seed and partition) give one row of
verdicts.parquet:

  delta, n_pairs      mean of d and the pairs it is over
  p_value, p_holm     the paired test of the analysis (`analysis.test`), Holm-adjusted over all the
                      report's claims (one family)
  ci_low, ci_high     an interval for the mean difference at the claim's level in that family:
                      fixed design: the t interval at level alpha p / p_holm, which excludes 0
                      exactly when p_holm < alpha (Holm's decisions, read as intervals);
                      sequential design (`replicate.sequential`): the repeated confidence
                      interval of the look the claim stopped at, at alpha / m per claim
                      (Bonferroni over the m claims: Holm's step-down needs every p-value at
                      once, which looks taken at different times do not have)
  p_vs_paper          one-sample t-test of delta = the paper's effect (null for a claim of direction
                      only, which is judged as an effect just beyond zero on its side)
  converged           both compared cells' dev curves converged (`convergence`)
  verdict             not converged -> inconclusive; interval wholly on the paper's side of zero ->
                      reproduced; interval excludes the paper's effect -> contradicted; otherwise
                      inconclusive (`sequential.interval_verdict`)
  aso_eps_min,        Almost Stochastic Order (Dror et al. 2019, via `deepsig`): eps_min of method
  aso_eps_min_reverse over partner and of partner over method, as information, not part of the rule
  tuning columns      both arms' tune trials, searched keys and epochs: the effort each side got
  cpu_hours           reserved CPU-hours (GPU-hours in gpu_hours) of both arms' tune trials and of
                      the replicates the verdict rests on

`best_other` as partner is the other method with the best mean dev score in the setting
(`compare.best_other_choice`), chosen anew at every look of a sequential design.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from nerplat.analysis.compare import best_other_choice, paired_values
from nerplat.analysis.sequential import SequentialDesign, boundaries, decide, interval_verdict, look_schedule
from nerplat.analysis.settings import AnalysisSettings
from nerplat.analysis.stats import holm, paired_test
from nerplat.config.experiment import BEST_OTHER, Claim, Sequential

SETTING_COLUMNS = ("dataset", "sampler", "size")
SCHEMA = {
    "claim": pl.String(), "paper": pl.String(), "method": pl.String(), "partner": pl.String(), "metric": pl.String(),
    "dataset": pl.String(), "sampler": pl.String(), "size": pl.Int64(), "paper_effect": pl.Float64(), "direction": pl.String(), "delta": pl.Float64(),
    "ci_low": pl.Float64(), "ci_high": pl.Float64(), "ci_level": pl.Float64(), "p_value": pl.Float64(), "p_holm": pl.Float64(),
    "p_vs_paper": pl.Float64(), "n_pairs": pl.Int64(), "converged": pl.Boolean(), "verdict": pl.String(), "design": pl.String(),
    "looks_taken": pl.Int64(), "decided_look": pl.Int64(), "aso_eps_min": pl.Float64(), "aso_eps_min_reverse": pl.Float64(),
    "method_trials": pl.Int64(), "partner_trials": pl.Int64(), "method_searched": pl.String(), "partner_searched": pl.String(),
    "method_epochs": pl.Int64(), "partner_epochs": pl.Int64(), "cpu_hours": pl.Float64(), "gpu_hours": pl.Float64(),
    "arms": pl.List(pl.String()), "note": pl.String(),
}
VERDICT_COLUMNS = tuple(SCHEMA)
ARM_SCHEMA = {"arm": pl.String(), "tune_trials": pl.Int64(), "searched": pl.String(), "epochs": pl.Int64(), "cpus": pl.Float64(), "gpus": pl.Float64()}
ASO_ITERATIONS = 200  # deepsig's bootstrap: 1000 took 8 s a call on the 2 busy cores; ASO is information here


def arm_frame(plan: dict[str, Any] | None) -> pl.DataFrame:
    """One row per arm of a plan.json: its tune trials, searched keys, epochs and the CPUs and GPUs one trial reserves."""
    rows = []
    for arm in (plan or {}).get("arms", []):
        resources = arm.get("resources") or {}
        workers = resources.get("workers", 1)
        epochs = (arm.get("fixed") or {}).get("train", {}).get("epochs")
        rows.append({
            "arm": arm["id"], "tune_trials": arm.get("tune_trials", 0), "searched": ", ".join(sorted(arm.get("search_space") or {})),
            "epochs": epochs if isinstance(epochs, int) else None,
            "cpus": workers * resources.get("cpus_per_worker", 1.0), "gpus": workers * resources.get("gpus_per_worker", 0.0),
        })
    return pl.DataFrame(rows, schema=ARM_SCHEMA)


@dataclass(frozen=True)
class _Side:
    """The paired values of one claim in one setting: method values `a`, partner values `b`."""

    claim: Claim
    partner: str
    setting: dict[str, Any]  # the method's cell: dataset, sampler and axes
    partner_setting: dict[str, Any]  # the partner's: the same but for a claim across samplers
    arms: list[str]  # the arms the verdict reads (every arm of the setting for best_other)
    method_arms: list[str]
    partner_arms: list[str]
    a: np.ndarray
    b: np.ndarray


def claim_looks(sequential: Sequential, partitions: int) -> tuple[int, ...]:
    """The pair counts a claim is looked at: every `look_every` seeds (times the arm's partitions)
    from the first look with MINIMUM_PAIRS on, and max_seeds last. The replicate phase runs the
    seeds these need (`run.looks`); the analysis judges at them."""
    return look_schedule(sequential.max_seeds * partitions, sequential.look_every * partitions)


def claim_design(settings: AnalysisSettings, partitions: int, family_size: int) -> SequentialDesign | None:
    """The group-sequential design of one claim: its looks (`claim_looks`), at alpha / m."""
    sequential = settings.sequential
    if sequential is None:
        return None
    looks = claim_looks(sequential, partitions)
    return boundaries(looks, looks[-1], settings.alpha / max(family_size, 1), sequential.spending)


def verdicts(
    replicates: pl.DataFrame,
    cells: pl.DataFrame,
    settings: AnalysisSettings,
    axes: Sequence[str] = (),
    arms: pl.DataFrame | None = None,
    trials: pl.DataFrame | None = None,
    aso: bool = True,
) -> pl.DataFrame:
    """One row per claim and matching setting (module docstring); empty without claims.

    `replicates` are usable replicate runs, `cells` the convergence verdicts (`convergence.convergence`),
    `arms` the plan's arms (`arm_frame`), `trials` the tune trials (for their cost).
    """
    sides = [side for claim in settings.claims for side in _sides(replicates, claim, settings, axes)]
    if not sides:
        return pl.DataFrame(schema=SCHEMA)
    p_values = np.array([_p_value(side, settings) for side in sides])
    adjusted = holm(p_values)
    arms = arms if arms is not None else pl.DataFrame(schema=ARM_SCHEMA)
    rows = []
    for side, p, p_holm in zip(sides, p_values, adjusted):
        partitions = max(1, replicates.filter(pl.col("arm").is_in(side.arms))["partition"].drop_nulls().n_unique())
        design = claim_design(settings, partitions, len(sides))
        row = _interval(side, p, p_holm, design, settings.alpha)
        row["arms"] = side.arms
        row |= _tuning(side, arms)
        row["converged"] = _converged(cells, side, axes)
        judged = row["converged"] and row["ci_low"] is not None
        row["verdict"] = interval_verdict(row["ci_low"], row["ci_high"], side.claim.rule_effect) if judged else "inconclusive"
        used = row["n_pairs"]
        row |= _aso(side.a[:used], side.b[:used], settings.alpha, len(sides)) if aso else {}
        row |= _cost(replicates, trials, arms, row["arms"], used)
        rows.append(_identity(side, settings) | row)
    return pl.DataFrame(rows, schema=SCHEMA)


def _sides(replicates: pl.DataFrame, claim: Claim, settings: AnalysisSettings, axes: Sequence[str]) -> list[_Side]:
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
    average = claim.metric.split("_")[0]
    if claim.partner == BEST_OTHER:
        choices = best_other_choice(frame, claim.method, f"dev_best_{average}_f1", axes)
        partners = [(row["partner"], {k: row[k] for k in ("dataset", "sampler", *axes)}) for row in choices.iter_rows(named=True)]
    else:
        partners = [(claim.partner, None)]
    sides = []
    for partner, only in partners:
        part = frame if only is None else frame.filter(*(pl.col(k).eq_missing(v) for k, v in only.items()))
        for row in paired_values(part, claim.method, partner, metric, axes).iter_rows(named=True):
            setting = {k: row[k] for k in ("dataset", "sampler", *axes)}
            in_setting = frame.filter(*(pl.col(k).eq_missing(v) for k, v in setting.items()))
            read = in_setting if claim.partner == BEST_OTHER else in_setting.filter(pl.col("method").is_in([claim.method, partner]))
            arms = sorted(read["arm"].drop_nulls().unique().to_list())
            own, other = (in_setting.filter(pl.col("method") == m)["arm"].drop_nulls().unique().to_list() for m in (claim.method, partner))
            sides.append(_Side(claim, partner, setting, setting, arms, own, other, np.asarray(row["a"], dtype=float), np.asarray(row["b"], dtype=float)))
    return sides


def _sampler_sides(replicates: pl.DataFrame, claim: Claim, metric: str, axes: Sequence[str]) -> list[_Side]:
    """A claim across sampler settings: the method at `where.sampler` against the partner at
    `partner_sampler`, paired by dataset, seed and partition (resampling changes the size)."""
    where = claim.where
    frame = replicates if where.dataset is None else replicates.filter(pl.col("dataset") == where.dataset)
    mine = frame.filter(pl.col("method") == claim.method, pl.col("sampler_label") == where.sampler)
    theirs = frame.filter(pl.col("method") == claim.partner, pl.col("sampler_label") == claim.partner_sampler)
    if mine.is_empty() or theirs.is_empty():
        return []
    marked = pl.concat([mine.with_columns(pl.lit("a").alias("method")), theirs.with_columns(pl.lit("b").alias("method"))], how="diagonal_relaxed")
    marked = marked.with_columns(pl.lit(where.sampler).alias("sampler"), pl.lit(None, pl.Int64).alias("size"))
    sides = []
    for row in paired_values(marked, "a", "b", metric, axes).iter_rows(named=True):
        setting = {"dataset": row["dataset"], "sampler": mine["sampler"][0], **{a: row[a] for a in axes}}
        partner_setting = {**setting, "sampler": theirs["sampler"][0]}
        own, other = (sorted(set(part["arm"].drop_nulls().to_list())) for part in (mine, theirs))
        sides.append(_Side(claim, claim.partner, setting, partner_setting, sorted({*own, *other}), own, other,
                           np.asarray(row["a"], dtype=float), np.asarray(row["b"], dtype=float)))
    return sides


def _p_value(side: _Side, settings: AnalysisSettings) -> float:
    if side.a.size < 2:
        return math.nan
    return float(paired_test(side.a[None, :], side.b[None, :], settings.test)[1][0])


def _interval(side: _Side, p: float, p_holm: float, design: SequentialDesign | None, alpha: float) -> dict[str, Any]:
    """delta, its interval and test against the paper, over the pairs the verdict rests on."""
    from scipy import stats

    d = side.a - side.b
    row: dict[str, Any] = {"p_value": _finite(p), "p_holm": _finite(p_holm), "looks_taken": None, "decided_look": None}
    if design is not None and d.size >= design.looks[0]:
        decision = decide(d, side.claim.rule_effect, design)
        last = decision.looks[-1]
        used = last.pairs
        row |= {"ci_low": last.ci_low, "ci_high": last.ci_high, "ci_level": 1 - last.nominal_alpha, "looks_taken": len(decision.looks),
                "decided_look": decision.decided_look, "design": f"sequential ({design.spending}, looks at {list(design.looks)} pairs)"}
    else:
        used = d.size
        level = alpha * p / p_holm if (np.isfinite(p) and np.isfinite(p_holm) and p_holm > 0) else alpha
        half = math.nan
        if used >= 2:
            with np.errstate(invalid="ignore", divide="ignore"):
                half = stats.t.ppf(1 - level / 2, used - 1) * d.std(ddof=1) / math.sqrt(used)
        mean = d.mean() if used else math.nan
        row |= {"ci_low": mean - half, "ci_high": mean + half, "ci_level": 1 - level, "design": "fixed"}
    kept = d[:used]
    row["delta"] = float(kept.mean()) if used else None
    row["n_pairs"] = int(used)
    row["p_vs_paper"] = None
    if used >= 2 and kept.std(ddof=1) > 0 and side.claim.effect is not None:
        row["p_vs_paper"] = float(stats.ttest_1samp(kept, side.claim.rule_effect).pvalue)
    row["ci_low"], row["ci_high"] = _finite(row["ci_low"]), _finite(row["ci_high"])
    return row


def _finite(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)


def _converged(cells: pl.DataFrame, side: _Side, axes: Sequence[str]) -> bool:
    """Both cells' verdicts are `converged` (an unknown verdict is not)."""
    if cells.is_empty():
        return False
    found = []
    for setting, method in ((side.setting, side.claim.method), (side.partner_setting, side.partner)):
        same = [pl.col(k).eq_missing(v) for k, v in setting.items()]
        found += cells.filter(*same, pl.col("method") == method)["converged"].to_list()
    return len(found) == 2 and all(bool(c) for c in found)


def _tuning(side: _Side, arms: pl.DataFrame) -> dict[str, Any]:
    """Both sides' tune trials, searched keys and epochs, from the plan's arms."""
    found: dict[str, Any] = {}
    for key, ids in (("method", side.method_arms), ("partner", side.partner_arms)):
        rows = arms.filter(pl.col("arm").is_in(ids))
        row = rows.row(0, named=True) if rows.height else {}
        found |= {f"{key}_trials": row.get("tune_trials"), f"{key}_searched": row.get("searched"), f"{key}_epochs": row.get("epochs")}
    return found


def _aso(a: np.ndarray, b: np.ndarray, alpha: float, comparisons: int) -> dict[str, float | None]:
    """eps_min of ASO both ways (deepsig); None with fewer than 2 pairs."""
    if a.size < 2:
        return {"aso_eps_min": None, "aso_eps_min_reverse": None}
    from deepsig import aso

    options = dict(confidence_level=1 - alpha, num_comparisons=comparisons, seed=0, show_progress=False,
                   num_bootstrap_iterations=ASO_ITERATIONS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # identical scores divide by zero inside deepsig; eps_min is still defined
        return {"aso_eps_min": float(aso(a.tolist(), b.tolist(), **options)), "aso_eps_min_reverse": float(aso(b.tolist(), a.tolist(), **options))}


def _cost(replicates: pl.DataFrame, trials: pl.DataFrame | None, arms: pl.DataFrame, arm_ids: list[str], used: int) -> dict[str, float | None]:
    """Reserved CPU- and GPU-hours of the arms' tune trials and of the replicates the verdict used."""
    reserved = {r["arm"]: (r["cpus"], r["gpus"]) for r in arms.iter_rows(named=True)}
    seconds: dict[str, float] = {}
    runs = replicates.filter(pl.col("arm").is_in(arm_ids)).sort("size", "seed", "partition", nulls_last=True)
    for arm in arm_ids:
        own = runs.filter(pl.col("arm") == arm).head(used)
        seconds[arm] = _seconds(own)
        if trials is not None and not trials.is_empty():
            seconds[arm] += _seconds(trials.filter(pl.col("arm") == arm))
    if not any(arm in reserved for arm in arm_ids):
        return {"cpu_hours": None, "gpu_hours": None}
    cpu = sum(seconds[a] * reserved.get(a, (1.0, 0.0))[0] for a in arm_ids) / 3600
    gpu = sum(seconds[a] * reserved.get(a, (1.0, 0.0))[1] for a in arm_ids) / 3600
    return {"cpu_hours": cpu, "gpu_hours": gpu}


def _seconds(runs: pl.DataFrame) -> float:
    """A run's wall time: `trial_seconds` where logged, else its setup, training and evaluation times."""
    if runs.is_empty():
        return 0.0
    parts = [c for c in ("time_setup_s", "time_train_s", "time_eval_s") if c in runs.columns]
    summed = pl.sum_horizontal([pl.col(c).fill_null(0.0) for c in parts]) if parts else pl.lit(0.0)
    total = pl.col("trial_seconds").fill_null(summed) if "trial_seconds" in runs.columns else summed
    return float(runs.select(total.sum()).item() or 0.0)


def _identity(side: _Side, settings: AnalysisSettings) -> dict[str, Any]:
    claim = side.claim
    return {
        "claim": claim.id, "paper": claim.paper, "method": claim.method, "partner": side.partner,
        "metric": settings.claim_metric(claim), "dataset": side.setting["dataset"], "sampler": side.setting["sampler"],
        "size": claim.where.size, "paper_effect": claim.effect, "direction": claim.direction or ("better" if claim.rule_effect > 0 else "worse"),
        "note": claim.note,
    }


@dataclass(frozen=True)
class VerdictText:
    """One verdict row as people read it, the same in the report, the README table and the terminal."""

    comparison: str  # "mom vs ce"
    where: str  # dataset, sampler, size
    paper: str  # the paper's effect, or its direction
    delta: str
    interval: str
    p_holm: str
    verdict: str  # with the look that decided the interval and whether the cells converged


def verdict_text(row: dict[str, Any], decimals: int = 4) -> VerdictText:
    """The text of a verdicts.parquet row (`verdicts`), numbers to `decimals` places."""
    from nerplat.analysis.table_model import p_text

    def signed(value: float | None) -> str:
        return "n/a" if value is None else f"{value:+.{decimals}f}"

    interval = "n/a" if row["ci_low"] is None else f"[{signed(row['ci_low'])}, {signed(row['ci_high'])}]"
    verdict = row["verdict"]
    if not row["converged"]:
        verdict += " (not converged)"
    if row["decided_look"] is not None:
        verdict += f", interval decided at look {row['decided_look'] + 1}"
    return VerdictText(
        comparison=f"{row['method']} vs {row['partner']}",
        where=", ".join(str(row[k]) for k in SETTING_COLUMNS if row.get(k) is not None),
        paper=row["direction"] if row["paper_effect"] is None else signed(row["paper_effect"]),
        delta=signed(row["delta"]),
        interval=interval,
        p_holm=p_text(row["p_holm"]),
        verdict=verdict,
    )
