"""Paper figures from the summary and trial frames, drawn with matplotlib's Agg backend.

  learning curves   AUC papers' Fig. 2-4: F1 against training size, 95% bootstrap band per method
  hyper-parameter   AUC-2T Fig. 3: dev F1 of tune trials against a sampled hyper-parameter, log axis
  dev curves        dev F1 against epoch per method: did the epoch budget converge?
  displacement      resampling Fig. 1: arrows from the baseline's (recall, precision) to each
                    method's, over F1 contour lines
Figures are built on `matplotlib.figure.Figure` directly (no pyplot state), so drawing is safe in
any thread and never opens a window.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from nerplat.analysis.run_frames import PARAM_PREFIX
from nerplat.analysis.settings import AnalysisSettings
from nerplat.analysis.table_model import method_order, natural_key, slug

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000")  # Okabe-Ito
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
ARROW_CLUSTERS = 6  # start points per displacement plot; more are unreadable
GRID_LIMIT = 15  # hyper-parameters with at most this many distinct values are plotted per value


@dataclass(frozen=True)
class Plot:
    name: str  # file stem, unique within a report
    caption: str
    figure: Figure


def _new_figure(width: float = 6.4, height: float = 4.4) -> tuple[Figure, Axes]:
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), dpi=100, layout="constrained")
    axes = figure.add_subplot()
    axes.grid(True, color="#dddddd", linewidth=0.6)
    axes.set_axisbelow(True)
    for side in ("top", "right"):
        axes.spines[side].set_visible(False)
    return figure, axes


def _styles(methods: Sequence[str]) -> dict[str, tuple[str, str]]:
    return {m: (PALETTE[i % len(PALETTE)], MARKERS[i % len(MARKERS)]) for i, m in enumerate(methods)}


def save(plot: Plot, directory: Path) -> list[Path]:
    """Writes `<name>.png` (150 dpi) and `<name>.svg`; SVG ids and dates are fixed, so reruns diff clean."""
    import matplotlib

    directory.mkdir(parents=True, exist_ok=True)
    paths = [directory / f"{plot.name}.png", directory / f"{plot.name}.svg"]
    plot.figure.savefig(paths[0], dpi=150, metadata={"Software": None})
    with matplotlib.rc_context({"svg.hashsalt": plot.name, "svg.fonttype": "none"}):
        plot.figure.savefig(paths[1], metadata={"Date": None, "Creator": None})
    return paths


def _metric_label(settings: AnalysisSettings) -> str:
    return f"{settings.split.capitalize()} {settings.average} F1"


def learning_curves(summary: pl.DataFrame, settings: AnalysisSettings, axes_columns: Sequence[str] = ()) -> list[Plot]:
    """F1 against training size per dataset and sampler family run at two or more sizes."""
    metric = settings.headline("f1")
    rows = summary.filter((pl.col("metric") == metric) & pl.col("size").is_not_null())
    plots = []
    keys = ["dataset", "sampler_family", *axes_columns]
    for key, part in rows.partition_by(keys, as_dict=True, maintain_order=True).items():
        sizes = sorted(part["size"].unique().to_list())
        if len(sizes) < 2:
            continue
        figure, axes = _new_figure()
        methods = method_order(part["method"].to_list(), settings.baseline)
        styles = _styles(methods)
        for method in methods:
            line = part.filter(pl.col("method") == method).sort("size")
            colour, marker = styles[method]
            x = line["size"].to_numpy()
            axes.plot(x, line["mean"].to_numpy(), color=colour, marker=marker, markersize=4, linewidth=1.6, label=method)
            low, high = line["ci_low"].to_numpy(), line["ci_high"].to_numpy()
            axes.fill_between(x, low, high, color=colour, alpha=0.18, linewidth=0)
        if sizes[-1] / max(sizes[0], 1) >= 10:
            _log_axis_at(axes, sizes)
        axes.set_xlabel("Training sentences")
        axes.set_ylabel(_metric_label(settings))
        where = dict(zip(keys, key))
        axes.set_title(_title(where), fontsize=10)
        axes.legend(frameon=False, fontsize=8, loc="lower right")
        caption = (
            f"{_metric_label(settings)} against training size ({_title(where)}): mean over replicates, "
            f"band = {settings.confidence:.0%} bootstrap percentile interval of the mean."
        )
        plots.append(Plot(slug("learning-curve", *key), caption, figure))
    return plots


def _log_axis_at(axes: Axes, ticks: Sequence[float]) -> None:
    """Log x axis labelled at the given values (sizes read better than powers of ten)."""
    from matplotlib.ticker import FixedLocator, NullLocator, ScalarFormatter

    axes.set_xscale("log")
    shown = _thin(ticks, 10)
    axes.xaxis.set_major_locator(FixedLocator(shown))
    axes.xaxis.set_major_formatter(ScalarFormatter())
    axes.xaxis.set_minor_locator(NullLocator())


def _thin(values: Sequence[float], limit: int) -> list[float]:
    """At most `limit` of the values, evenly spaced by position, always keeping both ends."""
    if len(values) <= limit:
        return list(values)
    positions = np.unique(np.round(np.linspace(0, len(values) - 1, limit)).astype(int))
    return [values[i] for i in positions]


def _title(where: dict) -> str:
    return " · ".join(str(v) for v in where.values() if v is not None)


def hyperparameter_curves(trials: pl.DataFrame, settings: AnalysisSettings) -> list[Plot]:
    """Dev F1 of every tune trial against each numeric sampled hyper-parameter, per dataset."""
    metric = next((m for m in (f"dev_best_{settings.average}_f1", f"dev_{settings.average}_f1") if m in trials.columns), None)
    if metric is None or trials.is_empty():
        return []
    usable = trials.filter(pl.col(metric).is_not_null() & (pl.col("status").fill_null("") != "failed"))
    # trials log their whole flattened TrialConfig; seeds and partitions are never search dimensions
    replicates = {PARAM_PREFIX + "seed", PARAM_PREFIX + "partition"}
    params = [c for c, t in usable.schema.items() if c.startswith(PARAM_PREFIX) and t.is_float() and c not in replicates]
    plots = []
    for dataset in sorted(usable["dataset"].drop_nulls().unique().to_list()):
        for param in params:
            rows = usable.filter((pl.col("dataset") == dataset) & pl.col(param).is_not_null())
            if rows[param].n_unique() < 3:
                continue
            plots.append(_hyperparameter_plot(rows, dataset, param, metric, settings))
    return plots


def _hyperparameter_plot(rows: pl.DataFrame, dataset: str, param: str, metric: str, settings: AnalysisSettings) -> Plot:
    name = param.removeprefix(PARAM_PREFIX)
    figure, axes = _new_figure()
    methods = method_order(rows["method"].drop_nulls().to_list(), settings.baseline)
    styles = _styles(methods)
    for method in methods:
        part = rows.filter(pl.col("method") == method).sort(param)
        colour, marker = styles[method]
        x, y = part[param].to_numpy(), part[metric].to_numpy()
        axes.scatter(x, y, color=colour, marker=marker, s=26, alpha=0.7, linewidths=0, zorder=3)
        centre_x, centre_y, low, high = _trend(x, y)
        axes.plot(centre_x, centre_y, color=colour, linewidth=1.2, alpha=0.8, label=f"{method} ({len(x)} trials)")
        if low is not None:
            axes.fill_between(centre_x, low, high, color=colour, alpha=0.15, linewidth=0)
    _hyperparameter_axis(axes, rows[param].to_numpy())
    axes.set_xlabel(name)
    best = "_best_" in metric
    axes.set_ylabel(f"Dev {settings.average} F1" + (" (best epoch)" if best else ""))
    axes.set_title(f"{dataset} · {name}", fontsize=10)
    axes.legend(frameon=False, fontsize=8, loc="best")
    caption = (
        f"{metric} of each tune trial against the sampled {name} on {dataset} (dots); line: mean per value "
        f"(per log-spaced bin when more than {GRID_LIMIT} values were sampled), band: 95% t-interval where a value has repeats."
    )
    return Plot(slug("hyperparameter", dataset, name), caption, figure)


def _trend(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None]:
    """Mean of y per distinct x (grid search) or per log-spaced bin of x (random/TPE search)."""
    from scipy import stats

    values = np.unique(x)
    if values.size <= GRID_LIMIT:
        groups = [y[x == v] for v in values]
        centres = values
    else:
        positive = x[x > 0]
        if positive.size and positive.min() > 0 and x.min() > 0:
            edges = np.geomspace(x.min(), x.max(), 9)
        else:
            edges = np.linspace(x.min(), x.max(), 9)
        bins = np.clip(np.searchsorted(edges, x, side="right") - 1, 0, len(edges) - 2)
        kept = [b for b in range(len(edges) - 1) if np.any(bins == b)]
        groups = [y[bins == b] for b in kept]
        centres = np.asarray([np.median(x[bins == b]) for b in kept])
    means = np.asarray([g.mean() for g in groups])
    if all(g.size < 2 for g in groups):
        return centres, means, None, None
    half = np.asarray([stats.t.ppf(0.975, g.size - 1) * g.std(ddof=1) / math.sqrt(g.size) if g.size > 1 else 0.0 for g in groups])
    return centres, means, means - half, means + half


def _hyperparameter_axis(axes: Axes, values: np.ndarray) -> None:
    """Log axis for positive values; symlog (linear around 0) when 0 was sampled too.

    Ticks at 1, 2 and 5 times powers of ten, written as plain numbers (0.02, 0.5, 100).
    """
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter, NullLocator, SymmetricalLogLocator

    positive = values[values > 0]
    if positive.size == 0 or (values < 0).any():
        return
    if (values == 0).any():
        linthresh = float(positive.min())
        axes.set_xscale("symlog", linthresh=linthresh)
        axes.xaxis.set_major_locator(SymmetricalLogLocator(linthresh=linthresh, base=10, subs=(1.0, 2.0, 5.0)))
    elif positive.max() / positive.min() >= 10:
        axes.set_xscale("log")
        axes.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    else:
        return
    axes.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    axes.xaxis.set_minor_locator(NullLocator())
    axes.xaxis.set_minor_formatter(NullFormatter())


def displacement_arrows(summary: pl.DataFrame, settings: AnalysisSettings, axes_columns: Sequence[str] = ()) -> list[Plot]:
    """Arrows in precision-recall space from the baseline to every other method, over F1 contours.

    Without `settings.reference_sampler` each sampler is a cluster starting at its own baseline
    runs; with it (a sampler tag or the spec's sampler label), every (sampler, method) of a dataset
    starts from the baseline under that sampler.
    """
    if settings.baseline is None:
        return []
    p, r = settings.headline("precision"), settings.headline("recall")
    rows = summary.filter(pl.col("metric").is_in([p, r]))
    if set(rows["metric"].unique()) != {p, r}:
        return []
    index = ["dataset", "sampler_family", "sampler", "sampler_label", "encoder", "head", "method"]
    wide = rows.pivot(on="metric", index=index, values="mean").drop_nulls([p, r])
    plots = []
    # with a reference sampler the models (encoder, head) are clusters of one plot, as in Wang & Wang 2022, Fig. 1
    plot_keys = ["dataset"] if settings.reference_sampler else ["dataset", "sampler_family", *axes_columns]
    for key, part in wide.partition_by(plot_keys, as_dict=True, maintain_order=True).items():
        clusters = _clusters(part, settings, p, r, axes_columns)
        if not clusters:
            continue
        shown = {k: clusters[k] for k in _thin(list(clusters), ARROW_CLUSTERS)}
        where = dict(zip(plot_keys, key))
        plots.append(_arrow_plot(shown, where, settings, hidden=len(clusters) - len(shown)))
    return plots


@dataclass(frozen=True)
class _Arrow:
    label: str
    start: tuple[float, float]  # (recall, precision)
    end: tuple[float, float]


def _clusters(
    part: pl.DataFrame, settings: AnalysisSettings, p: str, r: str, axes_columns: Sequence[str]
) -> dict[str, list[_Arrow]]:
    """Cluster label -> arrows from its start point (baseline) to each other treatment.

    Clusters are the settings a baseline run exists in: samplers (without a reference sampler)
    and the encoder/head axes; a head that comes with a method (CRF, two-task) is a treatment.
    """
    reference = settings.reference_sampler
    by = list(axes_columns) if reference else ["sampler", *axes_columns]
    groups = sorted(part.partition_by(by, as_dict=True).items(), key=lambda kv: natural_key(kv[0])) if by else [((), part)]
    varying = [i for i in range(len(by)) if len({key[i] for key, _ in groups}) > 1]
    clusters: dict[str, list[_Arrow]] = {}
    for key, cluster in groups:
        is_start = pl.col("method") == settings.baseline
        if reference:
            is_start = is_start & ((pl.col("sampler") == reference) | (pl.col("sampler_label") == reference))
        start_rows = cluster.filter(is_start)
        if start_rows.is_empty():
            continue
        start = (start_rows[r][0], start_rows[p][0])
        arrows = []
        for row in cluster.filter(~is_start).sort("sampler", "method").iter_rows(named=True):
            arrows.append(_Arrow(_treatment(row, reference, settings.baseline), start, (row[r], row[p])))
        if arrows:
            parts = [_size_part(key[i]) if by[i] == "sampler" else str(key[i]) for i in varying]
            clusters[" · ".join(parts) or settings.baseline] = arrows
    return clusters


def _treatment(row: dict, reference: str | None, baseline: str) -> str:
    """What differs from the start point: the method, the sampler, or both."""
    sampler = row["sampler_label"] or row["sampler"]
    if reference is None or reference in (row["sampler"], row["sampler_label"]):
        return row["method"]
    return sampler if row["method"] == baseline else f"{sampler} + {row['method']}"


_SIZE_TEXT = re.compile(r"\b(?:size|fraction)=[^,()]*")


def _size_part(sampler: str | None) -> str:
    """Within one sampler family only the size differs: 'low_resource(size=20, k=1)' -> 'size=20'."""
    found = _SIZE_TEXT.findall(sampler or "")
    return ", ".join(found) if found else str(sampler)


def _arrow_plot(clusters: dict[str, list[_Arrow]], where: dict, settings: AnalysisSettings, hidden: int = 0) -> Plot:
    figure, axes = _new_figure(7.6, 5.4)
    points = np.asarray([pt for arrows in clusters.values() for a in arrows for pt in (a.start, a.end)])
    low = np.clip(points.min(axis=0) - 0.04, 0.0, 1.0)
    high = np.clip(points.max(axis=0) + 0.04, 0.0, 1.0)
    _f1_contours(axes, low, high)
    for index, (cluster, arrows) in enumerate(clusters.items()):
        colour = PALETTE[index % len(PALETTE)]
        start = arrows[0].start
        axes.scatter([start[0]], [start[1]], color=colour, s=36, zorder=3, label=cluster)
        for arrow in arrows:
            axes.annotate(
                "", xy=arrow.end, xytext=arrow.start, zorder=3,
                arrowprops={"arrowstyle": "-|>", "color": colour, "linewidth": 1.4, "shrinkA": 0, "shrinkB": 0},
            )
            _label_beyond(axes, arrow, colour)
    axes.set_xlim(low[0], high[0])
    axes.set_ylim(low[1], high[1])
    axes.set_xlabel(f"{settings.split.capitalize()} {settings.average} recall")
    axes.set_ylabel(f"{settings.split.capitalize()} {settings.average} precision")
    axes.set_title(_title(where), fontsize=10)
    axes.legend(frameon=False, fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0),
                title=f"start: {settings.baseline}", title_fontsize=8)
    caption = (
        f"Displacement of {settings.average} precision and recall from {settings.baseline} (dots) to each method "
        f"(arrow heads) ({_title(where)}); dotted lines: F1 contours."
    )
    if hidden:
        caption += f" {len(clusters)} of {len(clusters) + hidden} start points shown, evenly spread; the tables have all."
    return Plot(slug("displacement", *where.values()), caption, figure)


def _label_beyond(axes: Axes, arrow: _Arrow, colour: str) -> None:
    """Writes the arrow's label just past its head, on the side it points to."""
    dx, dy = arrow.end[0] - arrow.start[0], arrow.end[1] - arrow.start[1]
    norm = math.hypot(dx, dy) or 1.0
    offset = (6 * dx / norm, 6 * dy / norm)
    axes.annotate(
        arrow.label, xy=arrow.end, xytext=offset, textcoords="offset points", fontsize=8, color=colour,
        ha="left" if dx >= 0 else "right", va="bottom" if dy >= 0 else "top",
    )


def _f1_contours(axes: Axes, low: np.ndarray, high: np.ndarray) -> None:
    recall = np.linspace(max(low[0], 1e-3), high[0], 400)
    precision = np.linspace(max(low[1], 1e-3), high[1], 400)
    rr, pp = np.meshgrid(recall, precision)
    f1 = 2 * rr * pp / (rr + pp)
    step = 0.05 if (high - low).max() < 0.4 else 0.1
    levels = np.arange(step, 1.0, step)
    levels = levels[(levels > f1.min()) & (levels < f1.max())]
    if levels.size == 0:
        return
    contours = axes.contour(rr, pp, f1, levels=levels, colors="#999999", linewidths=0.7, linestyles=":")
    axes.clabel(contours, fmt=lambda v: f"F1={v:.2f}", fontsize=7, inline=True)


def dev_curves(
    curves: pl.DataFrame, verdicts: pl.DataFrame, settings: AnalysisSettings, axes_columns: Sequence[str] = ()
) -> list[Plot]:
    """Mean dev F1 against epoch per method, one plot per dataset and sampler (and axis value);
    methods whose budget did not converge are drawn dashed and marked ‡ in the legend."""
    keys = ["dataset", "sampler", *axes_columns]
    unconverged = {
        tuple(r[k] for k in (*keys, "method"))
        for r in verdicts.filter(pl.col("converged").eq_missing(False)).iter_rows(named=True)
    } if verdicts.height else set()
    plots = []
    for key, part in curves.partition_by(keys, as_dict=True, maintain_order=True).items() if curves.height else []:
        figure, axes = _new_figure()
        methods = method_order(part["method"].to_list(), settings.baseline)
        styles = _styles(methods)
        for method in methods:
            line = part.filter(pl.col("method") == method).sort("epoch")
            colour, marker = styles[method]
            late = (*key, method) in unconverged
            axes.plot(line["epoch"].to_numpy(), line["mean"].to_numpy(), color=colour, marker=marker, markersize=4,
                      linewidth=1.6, linestyle="--" if late else "-", label=f"{method} ‡" if late else method)
        axes.set_xlabel("Epoch")
        axes.set_ylabel(f"Dev {settings.average} F1")
        where = dict(zip(keys, key))
        axes.set_title(_title(where), fontsize=10)
        axes.legend(frameon=False, fontsize=8, loc="lower right")
        caption = (
            f"Dev {settings.average} F1 after each evaluated epoch ({_title(where)}), mean over replicates; "
            "dashed with ‡: the epoch budget did not converge (see the dev-curve table)."
        )
        plots.append(Plot(slug("dev-curve", *key), caption, figure))
    return plots
