"""The headline table: per arm, the test metric's mean ± sd over replicates, n and the convergence verdict.

It is what `nerplat run` ends with and `nerplat analyze` prints, read from the report's
`summary.parquet` (so both commands, their `--json` and the report agree to the last digit). Rows
are plain data: the CLI renders them at any width, `--json` prints them with the full ids.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from nerplat.analysis.settings import AnalysisSettings
from nerplat.analysis.table_model import method_order, natural_key
from nerplat.analysis.tables import HEADLINE
from nerplat.plan.labels import arm_label_parts
from nerplat.run_keys import SEPARATOR
from nerplat.track.params import param_key

SUMMARY_FILE = "summary.parquet"
SETTINGS_FILE = "settings.json"
VERDICTS_FILE = "verdicts.parquet"
VERDICT_FIELDS = (
    "claim", "method", "partner", "dataset", "sampler", "size", "paper_effect", "direction", "delta", "ci_low", "ci_high",
    "p_holm", "n_pairs", "converged", "verdict", "decided_look",
)


@dataclass(frozen=True)
class HeadlineRow:
    """One arm's result. `label` is the short arm label of MLflow's run names; `arm` the full id."""

    label: str
    arm: str  # <dataset>/<sampler setting>/<method>, as in the plan
    dataset: str
    sampler: str
    method: str
    encoder: str | None
    head: str | None
    metric: str
    mean: float | None
    sd: float | None
    n: int
    converged: bool | None  # None: no dev curve to judge the epoch budget by

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def headline_rows(summary: pl.DataFrame, settings: AnalysisSettings) -> list[HeadlineRow]:
    """The rows of the headline table from a summary frame (`analysis.aggregate.summarise`).

    Arms are ordered by dataset and sampler, the baseline method first; the encoder and head join
    the label only when one method of a setting ran with several of them.
    """
    metric = settings.headline("f1")
    rows = summary.filter(pl.col("metric") == metric) if not summary.is_empty() else summary
    if rows.is_empty():
        return []
    records = list(rows.iter_rows(named=True))
    cells = [(r["dataset"], r["sampler_label"], r["method"]) for r in records]
    several_models = len(set(cells)) < len(cells)  # a method run with more than one encoder or head
    parts = arm_label_parts(cells)
    methods = method_order([r["method"] for r in records], settings.baseline)

    def order(pair: tuple[dict, tuple[str, ...]]) -> tuple:
        r = pair[0]
        return (
            natural_key((r["dataset"], r["sampler_label"])),
            methods.index(r["method"]),
            natural_key((str(r.get("encoder")), str(r.get("head")))),
        )

    return [
        HeadlineRow(
            label=SEPARATOR.join((*label, *((str(r.get("encoder")), str(r.get("head"))) if several_models else ()))),
            arm=f"{r['dataset']}/{r['sampler_label']}/{r['method']}",
            dataset=r["dataset"],
            sampler=r["sampler"],
            method=r["method"],
            encoder=r.get("encoder"),
            head=r.get("head"),
            metric=metric,
            mean=r["mean"],
            sd=r["sd"],
            n=int(r["n"]),
            converged=r.get("converged"),
        )
        for r, label in sorted(zip(records, parts), key=order)
    ]


@dataclass(frozen=True)
class Headline:
    """The headline table of one report: its rows, and how the report prints numbers."""

    rows: list[HeadlineRow]
    metric: str  # `test_micro_f1`
    decimals: int
    # the claims' verdicts (verdicts.parquet), when the spec has claims
    verdicts: list[dict[str, Any]] = field(default_factory=list)

    def metric_words(self) -> str:
        """`test_micro_f1` -> `test micro F1`."""
        return self.metric.replace("_", " ").replace(" f1", " F1")

    def as_json(self) -> list[dict[str, Any]]:
        return [row.as_dict() for row in self.rows]


def report_headline(report_dir: Path) -> Headline:
    """The headline table of a written report folder (its summary.parquet and settings.json)."""
    settings = AnalysisSettings.model_validate_json((report_dir / SETTINGS_FILE).read_text(encoding="utf-8"))
    rows = headline_rows(pl.read_parquet(report_dir / SUMMARY_FILE), settings)
    verdicts = report_dir / VERDICTS_FILE
    claims = pl.read_parquet(verdicts).select(VERDICT_FIELDS).to_dicts() if verdicts.is_file() else []
    return Headline(rows, settings.headline("f1"), settings.decimals, claims)


def headline_metrics(summary: pl.DataFrame, settings: AnalysisSettings) -> dict[str, float]:
    """The headline table's numbers as MLflow metrics: `<arm label>/<metric>_mean` and `_se` for
    precision, recall and F1, the label's parts joined by `/` (`mom/test_micro_f1_mean`)."""
    headline = [settings.headline(m) for m, _ in HEADLINE]
    rows = summary.filter(pl.col("metric").is_in(headline))
    cells = sorted({(r["dataset"], r["sampler_label"], r["method"]) for r in rows.iter_rows(named=True)}, key=str)
    paths = {cell: "/".join(param_key(part) for part in parts) for cell, parts in zip(cells, arm_label_parts(cells))}
    metrics = {}
    for row in rows.iter_rows(named=True):
        path = paths[(row["dataset"], row["sampler_label"], row["method"])]
        for stat, value in (("mean", row["mean"]), ("se", row["se"])):
            if value is not None:
                metrics[f"{path}/{row['metric']}_{stat}"] = value
    return metrics
