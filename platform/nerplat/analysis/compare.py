"""Paired comparisons over matched replicate runs (the MoM protocol and Wang & Wang 2022's sampler tables), with Holm.

Two kinds of comparison share one machinery:
  methods   within a setting (dataset, sampler and the `setting_axes`), runs paired by size, seed
            and partition;
  samplers  within a method (dataset, method and axes), each sampler setting against the reference
            one, runs paired by seed and partition (resampling changes the training size, so size
            is not a key).
Pairs are found by joining on the keys, never by position; a run whose partner is missing, or whose
partner lacks the metric, is listed in `PairedComparison.missing` and left out of its test.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import polars as pl

from nerplat.analysis.stats import PairedTest, holm, paired_test, power_analysis

MATCH_KEYS = ("dataset", "sampler", "size", "seed", "partition")
PAIR_ORDER = ("size", "seed", "partition")
TEST_COLUMNS = ("n_pairs", "mean", "partner_mean", "delta", "sd_delta", "statistic", "p_value", "test")


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
    """tests: one row per (method, partner, setting, metric); missing: one row per unpaired run.

    A sampler comparison has method == partner and differs in `sampler` vs `partner_sampler`.
    """

    tests: pl.DataFrame
    missing: pl.DataFrame
    best_other: pl.DataFrame | None = None  # `against_best_other`: the partner chosen in each setting


@dataclass(frozen=True)
class _Design:
    """What is compared (`by`), inside which groups (`within`), and which runs pair (`within` + `pair`)."""

    by: str
    within: tuple[str, ...]
    pair: tuple[str, ...]

    @property
    def keys(self) -> list[str]:
        return [*self.within, *self.pair]


def compare_pairs(
    frame: pl.DataFrame,
    pairs: Sequence[tuple[str, str]],
    metrics: Sequence[str],
    test: PairedTest,
    axes: Sequence[str] = (),
) -> PairedComparison:
    """Tests `method - partner` for each pair, per setting (dataset, sampler, axes) and metric."""
    design = _Design("method", ("dataset", "sampler", *axes), PAIR_ORDER)
    tests, missing = _compare(frame, design, pairs, metrics, test)
    tests = tests.rename({"a": "method", "b": "partner"}).with_columns(pl.col("sampler").alias("partner_sampler"))
    missing = missing.rename({"a": "method", "b": "partner"})
    return _finish(frame, tests, missing, axes)


def compare_samplers(
    frame: pl.DataFrame, reference: str, metrics: Sequence[str], test: PairedTest, axes: Sequence[str] = ()
) -> PairedComparison:
    """Tests `sampler - reference` (sampler labels) within each method, dataset and axis value."""
    labels = frame.filter(pl.col("sampler_label").is_not_null() & (pl.col("sampler_label") != reference))
    pairs = [(label, reference) for label in sorted(labels["sampler_label"].unique().to_list())]
    if frame.is_empty() or reference not in frame["sampler_label"].to_list():
        pairs = []
    design = _Design("sampler_label", ("dataset", "method", *axes), ("seed", "partition"))
    tests, missing = _compare(frame, design, pairs, metrics, test)
    described = frame.select("dataset", "sampler_label", "sampler").unique(["dataset", "sampler_label"], keep="first")
    tests = (
        tests.join(described.rename({"sampler_label": "a"}), on=["dataset", "a"], how="left", nulls_equal=True)
        .join(
            described.rename({"sampler_label": "b", "sampler": "partner_sampler"}),
            on=["dataset", "b"], how="left", nulls_equal=True,
        )
        .drop("a", "b")
        .with_columns(pl.col("method").alias("partner"))
    )
    missing = missing.rename({"a": "sampler_label", "b": "partner_sampler_label"}).with_columns(pl.col("method").alias("partner"))
    return _finish(frame, tests, missing, axes)


def _finish(frame: pl.DataFrame, tests: pl.DataFrame, missing: pl.DataFrame, axes: Sequence[str]) -> PairedComparison:
    families = frame.select("sampler", "sampler_family").unique("sampler", keep="first")
    tests = tests.join(families, on="sampler", how="left", nulls_equal=True)
    order = ["method", "partner", "dataset", "sampler_family", "sampler", "partner_sampler", *axes, "metric"]
    return PairedComparison(
        tests=tests.select(*order, *TEST_COLUMNS).sort(order, nulls_last=True),
        missing=missing.sort(missing.columns, nulls_last=True),
    )


def _compare(frame, design: _Design, pairs, metrics, test) -> tuple[pl.DataFrame, pl.DataFrame]:
    tests, missing = [], []
    for subject, partner in pairs:
        joined = _join_pair(frame, design, subject, partner, metrics)
        missing.append(_unpaired(joined, design, subject, partner, metrics))
        tests += [_test_metric(joined, design, subject, partner, metric, test) for metric in metrics]
    return (
        pl.concat(tests) if tests else _empty_tests(frame, design),
        pl.concat(missing) if missing else _empty_missing(frame, design),
    )


def _side(frame: pl.DataFrame, design: _Design, value: str, prefix: str, metrics: Sequence[str]) -> pl.DataFrame:
    rows = frame.filter(pl.col(design.by) == value).select(*design.keys, "run_id", *metrics)
    return rows.rename({c: f"{prefix}{c}" for c in ("run_id", *metrics)})


def _join_pair(frame, design: _Design, subject, partner, metrics) -> pl.DataFrame:
    """Both sides' runs, matched by the design's keys, in the settings where both sides have runs.

    A setting with runs on one side only is a cell the spec did not plan for the other (Wang & Wang 2022's grid
    runs some samplers for some models only), not a missing partner; a planned cell whose runs all
    failed still has (failed) runs, so its runs stay and are listed as unpaired.
    """
    left = _side(frame, design, subject, "a:", metrics)
    right = _side(frame, design, partner, "b:", metrics)
    joined = left.join(right, on=design.keys, how="full", coalesce=True, nulls_equal=True)
    within = list(design.within)
    both = pl.col("a:run_id").is_not_null().any().over(within) & pl.col("b:run_id").is_not_null().any().over(within)
    return joined.filter(both)


def _present(column: str) -> pl.Expr:
    return pl.col(column).is_not_null() & ~pl.col(column).is_nan()


def _unpaired(joined, design: _Design, subject, partner, metrics) -> pl.DataFrame:
    """Runs without a partner run, or whose partner run lacks a metric the other side has."""

    def lacks(side: str, other: str, name: str) -> pl.Expr:
        names = [pl.when(_present(f"{other}:{m}") & ~_present(f"{side}:{m}")).then(pl.lit(m)) for m in metrics]
        listed = pl.concat_str(names, separator=", ", ignore_nulls=True) if names else pl.lit("")
        return pl.when(listed != "").then(pl.format("{} run lacks {}", pl.lit(name), listed))

    keys = design.keys
    no_run = f"no {{}} run with the same {', '.join(keys[:-1])} and {keys[-1]}"
    detail = (
        pl.when(pl.col("b:run_id").is_null())
        .then(pl.lit(no_run.format(partner)))
        .when(pl.col("a:run_id").is_null())
        .then(pl.lit(no_run.format(subject)))
        .otherwise(pl.concat_str([lacks("b", "a", partner), lacks("a", "b", subject)], separator="; ", ignore_nulls=True))
    )
    incomplete = pl.col("b:run_id").is_null() | pl.col("a:run_id").is_null()
    for m in metrics:
        incomplete = incomplete | (_present(f"a:{m}") ^ _present(f"b:{m}"))
    return joined.filter(incomplete).select(
        pl.lit(subject).alias("a"),
        pl.lit(partner).alias("b"),
        *keys,
        pl.col("a:run_id").alias("run_id"),
        pl.col("b:run_id").alias("partner_run_id"),
        detail.alias("detail"),
    )


def _paired_lists(joined, design: _Design, metric, keys: dict[str, str] | None = None) -> pl.DataFrame:
    """Per setting (`design.within`), the paired values of both sides as lists `a` and `b`, in pair
    order, and the pairs' `keys` columns as lists (column -> name)."""
    a, b = f"a:{metric}", f"b:{metric}"
    paired = _present(a) & _present(b)
    # rows keep the frame's order inside a group, so sorting first lines pairs up reproducibly
    grouped = joined.sort(list(design.pair), nulls_last=True).group_by(list(design.within), maintain_order=True).agg(
        pl.col(a).filter(paired).alias("a"),
        pl.col(b).filter(paired).alias("b"),
        *(pl.col(column).filter(paired).alias(name) for column, name in (keys or {}).items()),
    )
    return grouped.with_columns(pl.col("a").list.len().cast(pl.UInt32).alias("n_pairs"))


def paired_values(frame: pl.DataFrame, subject: str, partner: str, metric: str, axes: Sequence[str] = ()) -> pl.DataFrame:
    """`subject`'s and `partner`'s values of `metric`, matched by size, seed and partition within each
    setting (dataset, sampler, axes): one row per setting with lists `a`, `b` (pair order), the pairs'
    `seed`, `partition` and run ids `a_run`, `b_run`, and `n_pairs`."""
    design = _Design("method", ("dataset", "sampler", *axes), PAIR_ORDER)
    keys = {"seed": "seed", "partition": "partition", "a:run_id": "a_run", "b:run_id": "b_run"}
    return _paired_lists(_join_pair(frame, design, subject, partner, [metric]), design, metric, keys)


def _test_metric(joined, design: _Design, subject, partner, metric, test) -> pl.DataFrame:
    grouped = _paired_lists(joined, design, metric)
    parts = []
    for (n,), part in grouped.partition_by("n_pairs", as_dict=True).items():
        values_a = part["a"].explode().to_numpy().reshape(part.height, n)
        values_b = part["b"].explode().to_numpy().reshape(part.height, n)
        statistic, p_value = paired_test(values_a, values_b, test)
        nan = np.full(part.height, np.nan)
        with np.errstate(invalid="ignore"):
            mean_a = values_a.mean(axis=1) if n else nan
            mean_b = values_b.mean(axis=1) if n else nan
            sd = (values_a - values_b).std(axis=1, ddof=1) if n > 1 else nan
        parts.append(
            part.drop("a", "b").with_columns(
                pl.Series("mean", mean_a).fill_nan(None),
                pl.Series("partner_mean", mean_b).fill_nan(None),
                pl.Series("delta", mean_a - mean_b).fill_nan(None),
                pl.Series("sd_delta", sd).fill_nan(None),
                pl.Series("statistic", statistic).fill_nan(None),
                pl.Series("p_value", p_value).fill_nan(None),
            )
        )
    result = pl.concat(parts) if parts else _empty_tests(joined, design).drop("a", "b", "metric", "test")
    return result.with_columns(
        pl.lit(subject).alias("a"),
        pl.lit(partner).alias("b"),
        pl.lit(metric).alias("metric"),
        pl.lit(test).alias("test"),
    )


def _empty_tests(frame: pl.DataFrame, design: _Design) -> pl.DataFrame:
    schema = {c: frame.schema.get(c, pl.String()) for c in design.within} | {c: pl.String() for c in ("a", "b", "metric", "test")}
    schema |= {"n_pairs": pl.UInt32()} | {c: pl.Float64() for c in TEST_COLUMNS[1:-1]}
    return pl.DataFrame(schema=schema)


def _empty_missing(frame: pl.DataFrame, design: _Design) -> pl.DataFrame:
    schema = {"a": pl.String(), "b": pl.String()} | {k: frame.schema[k] for k in design.keys}
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


def with_power(tests: pl.DataFrame, alpha: float) -> pl.DataFrame:
    """Adds `mde` (smallest difference detectable at 80% power with the pairs used) and `n_needed`
    (pairs that would detect the observed difference at 80% power), from each test's paired differences."""
    if tests.is_empty():
        return tests.with_columns(pl.lit(None, pl.Float64).alias("mde"), pl.lit(None, pl.Int64).alias("n_needed"))
    parts = []
    for (test,), part in tests.with_row_index("_row").partition_by("test", as_dict=True).items():
        mde, needed = power_analysis(
            part["delta"].fill_null(np.nan).to_numpy(),
            part["sd_delta"].fill_null(np.nan).to_numpy(),
            part["n_pairs"].cast(pl.Float64).to_numpy(),
            alpha,
            test,
        )
        parts.append(part.with_columns(
            pl.Series("mde", mde).fill_nan(None), pl.Series("n_needed", needed).fill_nan(None).cast(pl.Int64)
        ))
    return pl.concat(parts).sort("_row").drop("_row")


def against_best_other(
    frame: pl.DataFrame, method: str, score: str, metrics: Sequence[str], test: PairedTest, axes: Sequence[str] = ()
) -> PairedComparison:
    """`method` against the other method with the highest mean `score` (a dev metric) of its replicates,
    chosen separately in each setting (dataset, sampler, axes) where `method` ran (Nemoto et al. 2024's protocol).

    `best_other` holds the choice: one row per setting with `partner` and its mean `dev_score`.
    Ties go to the method name first in alphabetical order, so the choice is reproducible.
    """
    within = ["dataset", "sampler", *axes]
    chosen = best_other_choice(frame, method, score, axes)
    if frame.is_empty() or score not in frame.columns:
        return replace(compare_pairs(frame.clear(), [], metrics, test, axes), best_other=chosen)
    tests, missing = [], []
    for row in chosen.iter_rows(named=True):
        part = frame.filter(*(pl.col(k).eq_missing(row[k]) for k in within))
        result = compare_pairs(part, [(method, row["partner"])], metrics, test, axes)
        tests.append(result.tests)
        missing.append(result.missing)
    if not tests:
        return replace(compare_pairs(frame.clear(), [], metrics, test, axes), best_other=chosen)
    return PairedComparison(pl.concat(tests), pl.concat(missing), chosen)


def best_other_choice(frame: pl.DataFrame, method: str, score: str, axes: Sequence[str] = ()) -> pl.DataFrame:
    """Per setting (dataset, sampler, axes) where `method` ran, the other method with the highest mean
    `score` over its replicates: columns of the setting, `partner` and its mean `dev_score`.
    Ties go to the method name first in alphabetical order, so the choice is reproducible."""
    within = ["dataset", "sampler", *axes]
    schema = {k: frame.schema.get(k, pl.String()) for k in within} | {"partner": pl.String(), "dev_score": pl.Float64()}
    if frame.is_empty() or score not in frame.columns:
        return pl.DataFrame(schema=schema)
    ran = frame.filter(pl.col("method") == method).select(within).unique()
    means = (
        frame.filter(pl.col("method") != method, _present(score))
        .join(ran, on=within, nulls_equal=True)
        .group_by([*within, "method"])
        .agg(pl.col(score).mean().alias("dev_score"))
    )
    chosen = means.sort(["dev_score", "method"], descending=[True, False]).unique(within, keep="first", maintain_order=True)
    return chosen.rename({"method": "partner"}).select(list(schema)).sort(within, nulls_last=True)
