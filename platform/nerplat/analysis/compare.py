"""Paired comparisons of methods over matched replicate runs (the MoM protocol), with Holm.

Two runs are a pair when they share dataset, sampler, size, seed and partition (and encoder or
head when those vary within a method, see `setting_axes`). Pairs are found by joining on those
keys, never by position; a run whose partner is missing, or whose partner lacks the metric, is
listed in `PairedComparison.missing` and left out of its test.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from nerplat.analysis.stats import PairedTest, holm, paired_test

MATCH_KEYS = ("dataset", "sampler", "size", "seed", "partition")
PAIR_ORDER = ("size", "seed", "partition")


def setting_axes(frame: pl.DataFrame) -> list[str]:
    """Encoder and head columns that vary within some method: they are settings to compare within.

    When a method fixes its head (CE with softmax, CRF with crf), comparing it with another method
    crosses heads by design; when one method runs under several heads, each head is its own setting.
    """
    axes = []
    for column in ("encoder", "head"):
        distinct = frame.group_by("method").agg(pl.col(column).n_unique().alias("k"))
        if not distinct.is_empty() and distinct["k"].max() > 1:
            axes.append(column)
    return axes


@dataclass(frozen=True)
class PairedComparison:
    """tests: one row per (method, partner, setting, metric); missing: one row per unpaired run."""

    tests: pl.DataFrame
    missing: pl.DataFrame


def compare_pairs(
    frame: pl.DataFrame,
    pairs: Sequence[tuple[str, str]],
    metrics: Sequence[str],
    test: PairedTest,
    axes: Sequence[str] = (),
) -> PairedComparison:
    """Tests `method - partner` for each pair, per setting (dataset, sampler, axes) and metric."""
    tests, missing = [], []
    for method, partner in pairs:
        joined = _join_pair(frame, method, partner, metrics, axes)
        missing.append(_unpaired(joined, method, partner, metrics, axes))
        for metric in metrics:
            tests.append(_test_metric(joined, method, partner, metric, test, axes))
    families = frame.select("sampler", "sampler_family").unique()
    tests_frame = pl.concat(tests) if tests else _empty_tests(frame, axes)
    tests_frame = tests_frame.join(families, on="sampler", how="left", nulls_equal=True)
    order = ["method", "partner", "dataset", "sampler_family", "sampler", *axes, "metric"]
    columns = [*order, "n_pairs", "mean", "partner_mean", "delta", "statistic", "p_value", "test"]
    missing_frame = pl.concat(missing) if missing else _empty_missing(frame, axes)
    return PairedComparison(
        tests=tests_frame.select(columns).sort(order, nulls_last=True),
        missing=missing_frame.sort(["method", "partner", *MATCH_KEYS, *axes], nulls_last=True),
    )


def _side(frame: pl.DataFrame, method: str, prefix: str, metrics: Sequence[str], keys: list[str]) -> pl.DataFrame:
    rows = frame.filter(pl.col("method") == method).select(*keys, "run_id", *metrics)
    return rows.rename({c: f"{prefix}{c}" for c in ("run_id", *metrics)})


def _join_pair(frame, method, partner, metrics, axes) -> pl.DataFrame:
    keys = [*MATCH_KEYS, *axes]
    left = _side(frame, method, "a:", metrics, keys)
    right = _side(frame, partner, "b:", metrics, keys)
    return left.join(right, on=keys, how="full", coalesce=True, nulls_equal=True)


def _present(column: str) -> pl.Expr:
    return pl.col(column).is_not_null() & ~pl.col(column).is_nan()


def _unpaired(joined, method, partner, metrics, axes) -> pl.DataFrame:
    """Runs without a partner run, or whose partner run lacks a metric the other side has."""

    def lacks(side: str, other: str, name: str) -> pl.Expr:
        names = [pl.when(_present(f"{other}:{m}") & ~_present(f"{side}:{m}")).then(pl.lit(m)) for m in metrics]
        listed = pl.concat_str(names, separator=", ", ignore_nulls=True) if names else pl.lit("")
        return pl.when(listed != "").then(pl.format("{} run lacks {}", pl.lit(name), listed))

    no_run = "no {} run with the same dataset, sampler, size, seed and partition"
    detail = (
        pl.when(pl.col("b:run_id").is_null())
        .then(pl.lit(no_run.format(partner)))
        .when(pl.col("a:run_id").is_null())
        .then(pl.lit(no_run.format(method)))
        .otherwise(pl.concat_str([lacks("b", "a", partner), lacks("a", "b", method)], separator="; ", ignore_nulls=True))
    )
    incomplete = pl.col("b:run_id").is_null() | pl.col("a:run_id").is_null()
    for m in metrics:
        incomplete = incomplete | (_present(f"a:{m}") ^ _present(f"b:{m}"))
    return joined.filter(incomplete).select(
        pl.lit(method).alias("method"),
        pl.lit(partner).alias("partner"),
        *MATCH_KEYS,
        *axes,
        pl.col("a:run_id").alias("run_id"),
        pl.col("b:run_id").alias("partner_run_id"),
        detail.alias("detail"),
    )


def _test_metric(joined, method, partner, metric, test, axes) -> pl.DataFrame:
    a, b = f"a:{metric}", f"b:{metric}"
    paired = _present(a) & _present(b)
    setting = ["dataset", "sampler", *axes]
    # rows keep the frame's order inside a group, so sorting first lines pairs up reproducibly
    grouped = joined.sort(list(PAIR_ORDER), nulls_last=True).group_by(setting).agg(
        pl.col(a).filter(paired).alias("a"),
        pl.col(b).filter(paired).alias("b"),
    )
    grouped = grouped.with_columns(pl.col("a").list.len().cast(pl.UInt32).alias("n_pairs"))
    parts = []
    for (n,), part in grouped.partition_by("n_pairs", as_dict=True).items():
        values_a = part["a"].explode().to_numpy().reshape(part.height, n)
        values_b = part["b"].explode().to_numpy().reshape(part.height, n)
        statistic, p_value = paired_test(values_a, values_b, test)
        with np.errstate(invalid="ignore"):
            mean_a = values_a.mean(axis=1) if n else np.full(part.height, np.nan)
            mean_b = values_b.mean(axis=1) if n else np.full(part.height, np.nan)
        parts.append(
            part.drop("a", "b").with_columns(
                pl.Series("mean", mean_a).fill_nan(None),
                pl.Series("partner_mean", mean_b).fill_nan(None),
                pl.Series("delta", mean_a - mean_b).fill_nan(None),
                pl.Series("statistic", statistic).fill_nan(None),
                pl.Series("p_value", p_value).fill_nan(None),
            )
        )
    result = pl.concat(parts) if parts else grouped.drop("a", "b")
    return result.with_columns(
        pl.lit(method).alias("method"),
        pl.lit(partner).alias("partner"),
        pl.lit(metric).alias("metric"),
        pl.lit(test).alias("test"),
    )


def _empty_tests(frame: pl.DataFrame, axes: Sequence[str]) -> pl.DataFrame:
    schema = {c: pl.String() for c in ("method", "partner", "dataset", "sampler", *axes, "metric", "test")}
    schema |= {"n_pairs": pl.UInt32()} | {c: pl.Float64() for c in ("mean", "partner_mean", "delta", "statistic", "p_value")}
    return pl.DataFrame(schema=schema)


def _empty_missing(frame: pl.DataFrame, axes: Sequence[str]) -> pl.DataFrame:
    schema = {"method": pl.String(), "partner": pl.String()} | {k: frame.schema[k] for k in (*MATCH_KEYS, *axes)}
    return pl.DataFrame(schema=schema | {"run_id": pl.String(), "partner_run_id": pl.String(), "detail": pl.String()})


def with_holm(tests: pl.DataFrame, family: Sequence[str], alpha: float) -> pl.DataFrame:
    """Adds `p_holm` (Holm-adjusted within each family of tests) and `significant` (p_holm < alpha)."""
    if tests.is_empty():
        return tests.with_columns(pl.lit(None, pl.Float64).alias("p_holm"), pl.lit(None, pl.Boolean).alias("significant"))
    parts = []
    for _, part in tests.with_row_index("_row").partition_by(list(family), as_dict=True).items():
        adjusted = holm(part["p_value"].fill_null(np.nan).to_numpy())
        parts.append(part.with_columns(pl.Series("p_holm", adjusted).fill_nan(None)))
    adjusted = pl.concat(parts).sort("_row").drop("_row")
    return adjusted.with_columns((pl.col("p_holm") < alpha).fill_null(False).alias("significant"))
