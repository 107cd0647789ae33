"""Replicate frame -> summary frame: mean, sd, bootstrap SE and CI per setting, method and metric.

The summary is long: one row per (setting, method, metric), so tables and plots select the
metrics they show instead of knowing column names.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from nerplat.analysis.settings import AnalysisSettings
from nerplat.analysis.stats import bootstrap_summary

# A group of replicate runs: everything that identifies what was trained, except seed and partition.
GROUP_KEYS = ("dataset", "sampler_family", "sampler", "sampler_label", "encoder", "head", "objective", "method")
# Replicates inside a group are ordered by these before resampling, so fetch order never matters.
REPLICATE_ORDER = ("size", "seed", "partition", "run_id")


def metric_columns(frame: pl.DataFrame) -> list[str]:
    """Columns of a replicate frame that hold metrics (everything numeric that is not identity)."""
    identity = {"run_id", *GROUP_KEYS, "arm", "status", *REPLICATE_ORDER}
    return [c for c, t in frame.schema.items() if c not in identity and t.is_float()]


def summarise(frame: pl.DataFrame, metrics: Sequence[str], settings: AnalysisSettings) -> pl.DataFrame:
    """Mean, sample sd (ddof 1), bootstrap SE of the mean and percentile CI of each group and metric.

    `size` is the group's median training size (samplers that resample keep one size per seed).
    Missing or NaN metric values are left out of their group, so `n` may differ between metrics.
    """
    keys = list(GROUP_KEYS)
    schema = {k: frame.schema[k] for k in keys} | {
        "metric": pl.String(),
        "size": pl.Int64(),
        "n": pl.UInt32(),
        **{c: pl.Float64() for c in ("mean", "sd", "se", "ci_low", "ci_high")},
    }
    if frame.is_empty() or not metrics:
        return pl.DataFrame(schema=schema)
    sizes = frame.group_by(keys).agg(pl.col("size").median().round().cast(pl.Int64).alias("size"))
    # sorted first: rows keep this order inside each group, so sums (and the bootstrap) see the
    # same sequence of values whatever order the runs were fetched in
    long = (
        frame.sort(list(REPLICATE_ORDER), nulls_last=True)
        .unpivot(list(metrics), index=[*keys, *REPLICATE_ORDER], variable_name="metric", value_name="value")
        .with_columns(pl.col("value").fill_nan(None))
        .drop_nulls("value")
    )
    grouped = long.group_by([*keys, "metric"]).agg(
        pl.len().alias("n"),
        pl.col("value").mean().alias("mean"),
        pl.col("value").std(ddof=1).alias("sd"),
        pl.col("value").alias("values"),
    )
    parts = []
    for (n,), part in grouped.partition_by("n", as_dict=True).items():
        samples = part["values"].explode().to_numpy().reshape(part.height, n)
        se, low, high = bootstrap_summary(samples, settings.bootstrap_resamples, settings.seed, settings.confidence)
        parts.append(
            part.drop("values").with_columns(
                pl.Series("se", se).fill_nan(None),
                pl.Series("ci_low", low).fill_nan(None),
                pl.Series("ci_high", high).fill_nan(None),
            )
        )
    summary = pl.concat(parts).join(sizes, on=keys, nulls_equal=True)
    return summary.select(list(schema)).cast(schema).sort([*keys, "metric"], nulls_last=True)
