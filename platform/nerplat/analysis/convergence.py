"""Was the epoch budget enough? Dev learning curves and a convergence verdict per cell.

A method that is still improving when training stops is compared at a point of its choosing the
budget made, not at its best, and so is any baseline it is said to beat. Per cell (the replicate
runs of one setting and method, `aggregate.GROUP_KEYS`) the mean dev curve is read against its
own noise:

  window     the last max(4, ceil(E/3)) of the E evaluations
  slope      least-squares slope of the mean dev curve over the window, per epoch
  noise      the residual standard deviation of that fit: the curve's own epoch-to-epoch noise
  slope_t    slope / its standard error (noise / sqrt(sum of squared epoch deviations))
  curve      `rising` when the slope is both above noise (one-sided t-test at 5%, window - 2
             degrees of freedom) and above MIN_SLOPE per epoch; `degenerate` when the mean curve
             never rose MIN_RISE above its first evaluation (a model stuck at F1 0 learns nothing,
             which is no plateau); `short` with fewer than 4 evaluations (no slope and noise can be
             told apart); else `flat`
  converged  curve == flat

Why a slope against noise rather than a fixed gain: a fixed threshold over the last quarter calls a
noisy curve that stopped rising two epochs ago unconverged and a smooth one that rises a little
less converged; the same cell trained twice (fp32 and bf16) could get opposite labels from noise
alone. The t-test asks whether the rise is larger than the curve's own wobble; MIN_SLOPE keeps a
tiny but steady rise (0.1 F1 point an epoch) from counting. What no curve rule can tell: a
schedule that decays the learning rate to 0 flattens every curve by its last epochs, so `flat`
under linear decay says the run ended on a plateau, not that more epochs would not have helped.

`last_epoch_share` (replicates whose best dev epoch was the last evaluated one) is kept as
information. A cell without a dev curve (old runs, corpora without a dev split) is null: unknown.
Heads fitted outside the epoch loop (crfsuite) have no budget in epochs: their runs log
`fit_converged` (whether the optimiser met its own stopping test), and such a cell is converged
when every fit did.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from nerplat.analysis.aggregate import GROUP_KEYS

MIN_EVALUATIONS = 4  # a line through fewer points leaves no degrees of freedom for its noise
WINDOW_FRACTION = 1 / 3
SLOPE_ALPHA = 0.05  # one-sided: is the curve still rising beyond its noise?
MIN_SLOPE = 0.001  # per epoch: a tenth of an F1 point
MIN_RISE = 0.01  # a curve that never rose this much above its first evaluation learned nothing
RULE = (
    f"converged: over the last max({MIN_EVALUATIONS}, E/3) evaluations the mean dev curve's slope is not above its own "
    f"noise (one-sided t-test, {SLOPE_ALPHA}) or below {MIN_SLOPE} per epoch, and the curve rose at least {MIN_RISE} "
    "above its first evaluation (else degenerate)"
)
VERDICT_COLUMNS = ("last_epoch", "last_epoch_share", "slope", "slope_t", "noise", "curve", "converged")


@dataclass(frozen=True)
class CurveVerdict:
    """The rule's reading of one mean dev curve."""

    curve: str  # flat, rising, degenerate or short
    slope: float | None
    slope_t: float | None
    noise: float | None

    @property
    def converged(self) -> bool:
        return self.curve == "flat"


def read_curve(epochs: Sequence[float], values: Sequence[float]) -> CurveVerdict:
    """The module docstring's rule on one mean dev curve (points in any order; NaN points dropped)."""
    from scipy import stats

    points = sorted((float(e), float(v)) for e, v in zip(epochs, values) if v is not None and not math.isnan(v))
    if len(points) < MIN_EVALUATIONS:
        return CurveVerdict("short", None, None, None)
    x_all, y_all = np.array(points).T
    width = max(MIN_EVALUATIONS, math.ceil(len(points) * WINDOW_FRACTION))
    x, y = x_all[-width:], y_all[-width:]
    dx = x - x.mean()
    slope = float(dx @ (y - y.mean()) / (dx @ dx))
    residuals = y - y.mean() - slope * dx
    noise = float(np.sqrt(residuals @ residuals / (width - 2)))
    error = noise / np.sqrt(dx @ dx)
    t = slope / error if error > 0 else (math.inf if slope > 0 else -math.inf if slope < 0 else 0.0)
    if y_all.max() - y_all[0] < MIN_RISE:
        return CurveVerdict("degenerate", slope, t, noise)
    rising = slope > MIN_SLOPE and t > stats.t.ppf(1 - SLOPE_ALPHA, width - 2)
    return CurveVerdict("rising" if rising else "flat", slope, t, noise)


def dev_curves(replicates: pl.DataFrame, epochs: pl.DataFrame, metric: str) -> pl.DataFrame:
    """Mean dev score per epoch per cell: GROUP_KEYS, epoch, n (replicates evaluated), mean."""
    keys = list(GROUP_KEYS)
    points = epochs.filter(pl.col("metric") == metric).join(replicates.select("run_id", *keys), on="run_id")
    curves = points.group_by([*keys, "epoch"]).agg(pl.len().cast(pl.UInt32).alias("n"), pl.col("value").mean().alias("mean"))
    return curves.sort([*keys, "epoch"], nulls_last=True)


def convergence(replicates: pl.DataFrame, epochs: pl.DataFrame, metric: str) -> pl.DataFrame:
    """One row per cell: GROUP_KEYS and VERDICT_COLUMNS (see the module docstring for the rule)."""
    keys = list(GROUP_KEYS)
    schema = {k: replicates.schema[k] for k in keys} | {
        "last_epoch": pl.Int64(), "last_epoch_share": pl.Float64(), "slope": pl.Float64(), "slope_t": pl.Float64(),
        "noise": pl.Float64(), "curve": pl.String(), "converged": pl.Boolean(),
    }
    if replicates.is_empty() or "selected_epoch" not in replicates.columns:
        return pl.DataFrame(schema=schema)
    last = epochs.filter(pl.col("metric") == metric).group_by("run_id").agg(pl.col("epoch").max().alias("run_last"))
    runs = replicates.select("run_id", *keys, "selected_epoch").join(last, on="run_id")
    shares = runs.group_by(keys).agg(
        pl.col("run_last").max().alias("last_epoch"),
        (pl.col("selected_epoch").round() == pl.col("run_last")).mean().alias("last_epoch_share"),
    )
    curves = dev_curves(replicates, epochs, metric).group_by(keys, maintain_order=True).agg("epoch", "mean")
    rows = []
    for cell in curves.iter_rows(named=True):
        verdict = read_curve(cell["epoch"], cell["mean"])
        rows.append({**{k: cell[k] for k in keys}, "slope": verdict.slope, "slope_t": verdict.slope_t,
                     "noise": verdict.noise, "curve": verdict.curve, "converged": verdict.converged})
    read = pl.DataFrame(rows, schema={k: schema[k] for k in [*keys, "slope", "slope_t", "noise", "curve", "converged"]})
    verdicts = shares.join(read, on=keys, how="left", nulls_equal=True)
    return _with_fit_verdicts(verdicts, replicates).select(list(schema)).cast(schema).sort(keys, nulls_last=True)


def _with_fit_verdicts(verdicts: pl.DataFrame, replicates: pl.DataFrame) -> pl.DataFrame:
    """Cells whose runs logged `fit_converged` take it as their verdict instead of the curve's."""
    if "fit_converged" not in replicates.columns:
        return verdicts
    keys = list(GROUP_KEYS)
    fits = replicates.filter(pl.col("fit_converged").is_not_null()).group_by(keys).agg(
        (pl.col("fit_converged") == 1).all().alias("fit")
    )
    fitted = pl.col("fit").is_not_null()
    return verdicts.join(fits, on=keys, how="left", nulls_equal=True).with_columns(
        *(pl.when(fitted).then(None).otherwise(pl.col(c)).alias(c) for c in ("last_epoch_share", "slope", "slope_t", "noise")),
        pl.when(fitted).then(pl.when(pl.col("fit")).then(pl.lit("fit")).otherwise(pl.lit("fit_cut"))).otherwise(pl.col("curve")).alias("curve"),
        pl.when(fitted).then(pl.col("fit")).otherwise(pl.col("converged")).alias("converged"),
    )


def with_convergence(summary: pl.DataFrame, verdicts: pl.DataFrame) -> pl.DataFrame:
    """The summary with VERDICT_COLUMNS on every row of each cell (null where no verdict)."""
    keys = list(GROUP_KEYS)
    joined = summary.join(verdicts, on=keys, how="left", nulls_equal=True)
    return joined.select(*summary.columns, *VERDICT_COLUMNS)


def with_cell_convergence(tests: pl.DataFrame, verdicts: pl.DataFrame, axes: Sequence[str] = ()) -> pl.DataFrame:
    """Paired tests with `converged` (the method's cell) and `partner_converged` (the partner's cell)."""
    keys = ["dataset", "sampler", "method", *axes]
    cells = verdicts.select(*keys, "converged").unique(keys, keep="first")
    partner = cells.rename({"sampler": "partner_sampler", "method": "partner", "converged": "partner_converged"})
    partner_keys = ["dataset", "partner_sampler", "partner", *axes]
    return tests.join(cells, on=keys, how="left", nulls_equal=True).join(partner, on=partner_keys, how="left", nulls_equal=True)


_ADVICE = {
    "rising": "still rising beyond its noise; raise train.epochs for this cell and its partners",
    "degenerate": "never rose above its first evaluation: the method learned nothing (check the loss and its settings)",
    "short": f"fewer than {MIN_EVALUATIONS} evaluations: no plateau can be told from noise; evaluate more epochs",
    "fit_cut": "its fit stopped at its iteration limit in some replicates; raise the head's max_iterations",
}


def unconverged_cells(summary: pl.DataFrame, methods: Sequence[str] | None = None) -> list[str]:
    """One warning line per cell whose budget did not converge (of `methods`, default all).

    For `nerplat run` to print at the end: `unconverged_cells(pl.read_parquet(report / "summary.parquet"))`.
    """
    if "converged" not in summary.columns:
        return []
    cells = summary.filter(pl.col("converged").eq_missing(False)).unique(list(GROUP_KEYS), keep="first")
    if methods is not None:
        cells = cells.filter(pl.col("method").is_in(list(methods)))
    lines = []
    for row in cells.sort(list(GROUP_KEYS), nulls_last=True).iter_rows(named=True):
        curve = row.get("curve") or "short"
        shape = ""
        if row.get("slope") is not None:
            shape = f" (slope {row['slope']:+.4f}/epoch, t {row['slope_t']:.1f}, noise {row['noise']:.4f}, last epoch {row['last_epoch']})"
        lines.append(f"not converged: {row['method']} on {row['dataset']} ({row['sampler']}): {curve}{shape}: {_ADVICE.get(curve, '')}")
    return lines
