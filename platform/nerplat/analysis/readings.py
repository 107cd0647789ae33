"""Readings beside a claim: its pairs, on the units its verdict reads, in another metric.

A verdict judges the one metric a claim declares. What the paper also states (sec. VI's "each
score" of Nemoto et al. 2024: sentence and word accuracy beside macro F1) or what a report wants
to look at besides (a fixed decision threshold) is a reading: the same pairs and units, a paired
t-test at no declared level, not adjusted across metrics, never a verdict. A report that quotes
one names the `nerplat claims reading` command that printed it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from nerplat.analysis.compare import setting_axes
from nerplat.analysis.settings import AnalysisSettings
from nerplat.analysis.verdicts import claim_sides
from nerplat.config.experiment import BEST_OTHER, Claim
from nerplat.errors import Problem, UserInputError


@dataclass(frozen=True)
class Reading:
    """One claim's unit-level pairs in one setting and metric: each side's mean and sd over units,
    the mean and median of the differences, the units where the method is ahead, and the two-sided
    paired t-test's p (NaN below 2 units or without spread)."""

    claim: str
    method: str
    partner: str
    setting: str
    metric: str
    unit: str
    units: int
    mean: float
    sd: float
    partner_mean: float
    partner_sd: float
    delta: float
    median_delta: float
    ahead: int
    p_value: float

    def line(self) -> str:
        if not self.units:
            return (f"{self.claim}, {self.metric} ({self.setting}): no pair has it on both sides "
                    f"({self.method} against {self.partner})")
        return (
            f"{self.claim}, {self.metric} ({self.setting}): {self.method} {self.mean:.4f} ± {self.sd:.4f}, "
            f"{self.partner} {self.partner_mean:.4f} ± {self.partner_sd:.4f} over {self.units} {self.unit}s; "
            f"difference {self.delta:+.4f} (median {self.median_delta:+.4f}), {self.method} ahead on {self.ahead} "
            f"of {self.units}; paired t p {self.p_value:.3g}, unadjusted"
        )


def claim_readings(
    replicates: pl.DataFrame, claim: Claim, settings: AnalysisSettings, metrics: Sequence[str], source: str,
    partner_metric: str | None = None,
) -> list[Reading]:
    """The claim's pairs in each of `metrics` (names without the split: "sentence_accuracy"), per
    setting it covers, from `replicates` (a report's runs.parquet, read at `source`). A metric the
    runs do not have is refused with the ones they do. `partner_metric` reads the partner's runs in
    another metric than the method's one (a threshold-free CE against COMAUC-2T's fixed-threshold F1)."""
    usable = replicates.filter(pl.col("status") == "completed")
    prefix = f"{settings.split}_"
    if partner_metric is not None and (len(metrics) != 1 or claim.partner in (BEST_OTHER, claim.method)):
        raise UserInputError(Problem(
            f"--partner-metric reads one --metric of {claim.method} against another of a named partner: give one "
            f"--metric with it (not {len(metrics)}), for a claim whose partner is another method (not {claim.partner})",
            path="--partner-metric"))
    missing = [m for m in [*metrics, *([partner_metric] if partner_metric else [])] if f"{prefix}{m}" not in usable.columns]
    if missing:
        known = sorted(c.removeprefix(prefix) for c in usable.columns if c.startswith(prefix))
        raise UserInputError(Problem(
            f"{source} has no {', '.join(prefix + m for m in missing)}: give --metric as one of {', '.join(known)}",
            path="--metric"))
    axes = setting_axes(usable) if not usable.is_empty() else []
    found = []
    for metric in metrics:
        frame, name = usable, metric
        if partner_metric is not None:  # the partner's runs carry their metric under the method's column
            column = prefix + metric
            theirs = pl.when(pl.col("method") == claim.partner).then(pl.col(prefix + partner_metric))
            frame = usable.with_columns(theirs.otherwise(pl.col(column)).alias(column))
            name = f"{metric} against {claim.partner}'s {partner_metric}"
        for side in claim_sides(frame, claim.model_copy(update={"metric": metric}), settings, axes):
            setting = " ".join(str(v) for v in side.setting.values() if v is not None)
            found.append(_reading(claim, side.partner, setting, name, side.unit, side.a, side.b))
    return found


def _reading(claim: Claim, partner: str, setting: str, metric: str, unit: str, a: np.ndarray, b: np.ndarray) -> Reading:
    from scipy.stats import ttest_rel  # lazy: scipy, which the CLI's --help does not need

    nan = float("nan")
    d = a - b
    if not d.size:
        return Reading(claim.id, claim.method, partner, setting, metric, unit, 0, nan, nan, nan, nan, nan, nan, 0, nan)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = float(ttest_rel(a, b).pvalue) if d.size >= 2 else nan
    spread = (lambda x: float(np.std(x, ddof=1)) if x.size >= 2 else nan)
    return Reading(claim.id, claim.method, partner, setting, metric, unit, int(d.size), float(np.mean(a)), spread(a),
                   float(np.mean(b)), spread(b), float(np.mean(d)), float(np.median(d)), int(np.sum(d > 0)), p)


def report_readings(report: Path, settings: AnalysisSettings, claim_id: str, metrics: Sequence[str],
                    partner_metric: str | None = None) -> list[Reading]:
    """`claim_readings` of the claim `claim_id` of `settings` (a spec's) on a report folder's runs.parquet."""
    claims = settings.claims
    runs = report / "runs.parquet"
    if not runs.is_file():
        raise UserInputError(Problem(f"{runs} does not exist: give a report folder (docs/results/NAME, reports/NAME)",
                                     path="REPORT"))
    chosen = [c for c in claims if c.id == claim_id]
    if not chosen:
        raise UserInputError(Problem(
            f"the spec declares no claim {claim_id!r}: give --claim as one of {', '.join(c.id for c in claims) or '(none)'}",
            path="--claim"))
    return claim_readings(pl.read_parquet(runs), chosen[0], settings, metrics, str(runs), partner_metric)
