"""Figures: what each plot draws, and that PNG and SVG files come out (SVG reproducibly)."""

from __future__ import annotations

import polars as pl
import pytest

from nerplat.analysis import plots
from nerplat.analysis.aggregate import metric_columns, summarise
from nerplat.analysis.settings import AnalysisSettings
from nerplat.analysis.synthetic import synthetic_replicates

SETTINGS = AnalysisSettings(baseline="ce", bootstrap_resamples=200)


@pytest.fixture(scope="module")
def summary() -> pl.DataFrame:
    frame = synthetic_replicates(methods=("ce", "mom"), sizes=(20, 100, 1000), seeds=3, types=())
    return summarise(frame, metric_columns(frame), SETTINGS)


def test_learning_curve_has_a_line_and_band_per_method_on_a_log_axis(summary, tmp_path):
    (plot,) = plots.learning_curves(summary, SETTINGS)
    axes = plot.figure.axes[0]
    assert [line.get_label() for line in axes.get_lines()] == ["ce", "mom"]
    assert len(axes.collections) == 2  # the 95% bands
    assert axes.get_xscale() == "log"
    assert list(axes.get_lines()[0].get_xdata()) == [20, 100, 1000]
    png, svg = plots.save(plot, tmp_path)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and svg.read_text().lstrip().startswith("<?xml")


def test_svg_output_is_reproducible(summary, tmp_path):
    (plot,) = plots.learning_curves(summary, SETTINGS)
    first = plots.save(plot, tmp_path / "a")[1].read_bytes()
    assert plots.save(plot, tmp_path / "b")[1].read_bytes() == first


def test_a_single_size_gives_no_learning_curve(summary):
    assert plots.learning_curves(summary.filter(pl.col("size") == 20), SETTINGS) == []


def test_displacement_arrows_start_at_the_baseline_of_each_cluster(summary):
    (plot,) = plots.displacement_arrows(summary, SETTINGS)
    axes = plot.figure.axes[0]
    starts = [c.get_offsets()[0] for c in axes.collections if c.get_label() in ("size=20", "size=100", "size=1000")]
    assert len(starts) == 3
    ce = summary.filter((pl.col("method") == "ce") & (pl.col("size") == 20))
    recall = ce.filter(pl.col("metric") == "test_micro_recall")["mean"][0]
    precision = ce.filter(pl.col("metric") == "test_micro_precision")["mean"][0]
    assert tuple(starts[0]) == pytest.approx((recall, precision))
    assert sum(1 for t in axes.texts if t.get_text() == "mom") == 3


def test_no_baseline_means_no_arrows(summary):
    assert plots.displacement_arrows(summary, AnalysisSettings()) == []


def _trials(values: list[float]) -> pl.DataFrame:
    return pl.DataFrame({
        "dataset": ["toy"] * len(values), "method": ["mom"] * len(values), "status": ["completed"] * len(values),
        "param.objective.lambda": values, "param.seed": [float(i % 4) for i in range(len(values))],
        "dev_best_micro_f1": [0.5 + 0.1 * v for v in values],
    })


def test_hyperparameter_plot_uses_symlog_when_zero_was_sampled():
    (plot,) = plots.hyperparameter_curves(_trials([0.0, 0.01, 0.1, 1.0]), SETTINGS)
    assert plot.name == "hyperparameter-toy-objective.lambda"
    assert plot.figure.axes[0].get_xscale() == "symlog"


def test_hyperparameter_plot_uses_log_for_positive_values_and_skips_seeds():
    found = plots.hyperparameter_curves(_trials([0.001, 0.01, 0.1, 1.0]), SETTINGS)
    assert [p.name for p in found] == ["hyperparameter-toy-objective.lambda"]
    assert found[0].figure.axes[0].get_xscale() == "log"


def test_many_sampled_values_are_binned():
    values = [10 ** (-3 + 3 * i / 39) for i in range(40)]
    (plot,) = plots.hyperparameter_curves(_trials(values), SETTINGS)
    (trend,) = plot.figure.axes[0].get_lines()
    assert len(trend.get_xdata()) <= 8


def test_with_a_reference_sampler_every_treatment_starts_from_its_baseline():
    frames = []
    for label, shift in (("full", 0.0), ("sCR", 0.05)):
        part = synthetic_replicates(methods=("ce", "focal"), sizes=(100,), seeds=2, types=())
        frames.append(part.with_columns(pl.lit(label).alias("sampler"), pl.lit(label).alias("sampler_label"),
                                        pl.lit(label).alias("sampler_family"), pl.col("test_micro_recall") + shift))
    frame = pl.concat(frames)
    settings = AnalysisSettings(baseline="ce", reference_sampler="full", bootstrap_resamples=100)
    (plot,) = plots.displacement_arrows(summarise(frame, metric_columns(frame), settings), settings)
    labels = sorted(t.get_text() for t in plot.figure.axes[0].texts if t.get_text() and not t.get_text().startswith("F1="))
    assert labels == ["focal", "sCR", "sCR + focal"]


def test_a_head_that_comes_with_a_method_is_an_arrow_not_a_cluster(summary):
    two_task = summary.with_columns(
        pl.when(pl.col("method") == "mom").then(pl.lit("two_task")).otherwise(pl.col("head")).alias("head")
    ).filter(pl.col("size") == 20)
    (plot,) = plots.displacement_arrows(two_task, SETTINGS)
    assert [t.get_text() for t in plot.figure.axes[0].texts if t.get_text() == "mom"] == ["mom"]
