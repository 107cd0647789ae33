"""The tables around the comparisons (`tables.py`): the corpora and what sampling did to them,
how training went, what tuning chose and the claims' verdicts.

Layouts (the papers' tables they reproduce):
  dataset table     every paper's Table 1: sentences, tokens, mentions and % B/I/O per split
  size-factor table resampling Table 6: training-set size factor of each sampler per dataset
  dev-curve table   per cell: mean dev score per epoch, share of replicates that selected the last
                    epoch, runs stopped by patience, and the convergence verdict (`convergence`)
  chosen table      per tuned arm, the hyper-parameters chosen on dev and the dev score they reached
  savings table     per arm, the epochs its runs trained against their cap and the training hours
                    early stopping saved (`stopping_savings`)
  verdicts table    per claim: the paper's effect, ours with its interval, and the verdict
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import polars as pl

from nerplat.analysis.convergence import RULE
from nerplat.analysis.run_frames import PARAM_PREFIX
from nerplat.analysis.settings import AnalysisSettings
from nerplat.analysis.table_model import (
    Cell, Column, Row, Table, axis_groups, cell_lookup, mean_cell, method_order, n_note, natural_key, ranked, slug, where_text,
)  # fmt: skip
from nerplat.analysis.verdict_text import epochs_text, verdict_text


SPLITS = ("train", "dev", "test")


def dataset_table(stats: Mapping[str, Mapping[str, Mapping]], name: str = "datasets") -> Table:
    """Sentences, tokens, mentions and % B/I/O per split for each corpus (papers' Table 1).

    `stats` maps dataset -> split -> {sentences, tokens, mentions_per_type, pct_B, pct_I, pct_O},
    the shape of `$NERPLAT_DATA/manifest.json`; a split a corpus lacks is left blank.
    """
    columns = [Column(group, s.capitalize(), ranked=False) for group in ("Sentences", "Tokens", "Mentions") for s in SPLITS]
    columns += [Column("% B / I / O", s.capitalize(), ranked=False) for s in SPLITS]
    columns.append(Column("", "Types", ranked=False))
    body = []
    for dataset in sorted(stats):
        splits = stats[dataset]
        cells = []
        for measure in ("sentences", "tokens", "mentions"):
            for s in SPLITS:
                split = splits.get(s)
                value = None if split is None else (
                    sum(split["mentions_per_type"].values()) if measure == "mentions" else split[measure]
                )
                cells.append(Cell(text="" if value is None else f"{value:,}"))
        for s in SPLITS:
            split = splits.get(s)
            cells.append(Cell(
                text="" if split is None else f"{split['pct_B']:.1f} / {split['pct_I']:.1f} / {split['pct_O']:.1f}"
            ))
        types = {t for split in splits.values() for t in split["mentions_per_type"]}
        cells.append(Cell(text=str(len(types))))
        body.append(Row(dataset, tuple(cells)))
    caption = "Corpora: sentences, tokens and entity mentions per split, and the share of tokens tagged B, I and O."
    return Table(name, caption, "Dataset", tuple(columns), tuple(body))


def size_factor_table(summary: pl.DataFrame) -> Table | None:
    """Mean training-set size factor (after / before sampling, in tokens) per sampler and dataset."""
    rows = summary.filter(pl.col("metric") == "train_size_factor")
    if rows.is_empty():
        return None
    per_dataset = rows.group_by("sampler", "dataset").agg(pl.col("mean").mean())
    datasets = sorted(per_dataset["dataset"].unique().to_list(), key=natural_key)
    lookup = {(r["sampler"], r["dataset"]): r["mean"] for r in per_dataset.iter_rows(named=True)}
    body = []
    for sampler in sorted(per_dataset["sampler"].unique().to_list(), key=natural_key):
        values = [lookup.get((sampler, d)) for d in datasets]
        present = [v for v in values if v is not None]
        average = sum(present) / len(present) if present else None
        cells = tuple(Cell(value=v, digits=2) for v in values) + (Cell(value=average, digits=2),)
        body.append(Row(sampler, cells))
    columns = tuple(Column("", d, ranked=False) for d in datasets) + (Column("", "Average", ranked=False),)
    caption = (
        "Effect of each sampler on training-set size: tokens after sampling divided by tokens before "
        "(resampling repeats sentences, undersampling drops tokens), averaged over replicates; Average: over datasets."
    )
    return Table("size-factors", caption, "Sampler", columns, tuple(body))


def _stopped_text(verdict: dict) -> str:
    """'2/3 (mean epoch 7.3)'; n/a for a cell of crfsuite fits or of runs that did not record why they stopped."""
    runs, mean = verdict.get("runs"), verdict.get("mean_stopped_epoch")
    if verdict.get("judged_by") != "patience" or not runs or mean is None:
        return "n/a"
    return f"{verdict['stopped_by_patience']}/{runs} (mean epoch {mean:.1f})"


def dev_curve_tables(
    curves: pl.DataFrame, verdicts: pl.DataFrame, settings: AnalysisSettings, axes: Sequence[str] = ()
) -> list[Table]:
    """Per dataset and sampler (and axis value): methods x evaluated epochs, mean dev score, then the
    share of replicates that selected the last epoch, the runs stopped by patience and the convergence verdict."""
    tables = []
    for key, part in axis_groups(curves, ["dataset", "sampler", *axes]):
        epochs = sorted(part["epoch"].unique().to_list())
        lookup = cell_lookup(part, ["method", "epoch"])
        same = [pl.col(k).eq_missing(key[k]) for k in ("dataset", "sampler", *axes)]
        verdict = {r["method"]: r for r in verdicts.filter(*same).iter_rows(named=True)} if verdicts.height else {}
        body = []
        for method in method_order(part["method"].to_list(), settings.baseline):
            cells = [mean_cell(lookup.get((method, e)), settings.decimals) for e in epochs]
            v = verdict.get(method, {})
            share = v.get("last_epoch_share")
            cells.append(Cell(text="n/a" if share is None else f"{share:.0%}"))
            cells.append(Cell(text=_stopped_text(v)))
            converged = v.get("converged")
            why = "fit cut" if v.get("judged_by") == "fit" else "cap"
            cells.append(Cell(text="unknown" if converged is None else "yes" if converged else f"no ‡ ({why})"))
            body.append(Row(method, tuple(cells)))
        columns = tuple(Column("Epoch", str(e)) for e in epochs) + (
            Column("", "Last epoch selected", ranked=False),
            Column("", "Stopped by patience", ranked=False),
            Column("", "Converged", ranked=False),
        )
        where = where_text(("dataset", key["dataset"]), ("sampler", key["sampler"]), *((a, key[a]) for a in axes))
        caption = (
            f"Dev {settings.average} F1 after each evaluated epoch ({where}): mean over replicates; Last epoch selected: "
            "share of replicates whose best dev epoch was the last one; Stopped by patience: runs that stopped at a dev "
            "plateau (train.early_stopping) of all runs, and the mean epoch the runs stopped at."
        )
        notes = (n_note(part), f"Rule: {RULE}. ‡ not converged.")
        tables.append(ranked(Table(
            slug("dev-curve", key["dataset"], key["sampler"], *(key[a] for a in axes)),
            caption, "Method", columns, tuple(body), notes,
        )))
    return tables


def savings_table(savings: pl.DataFrame, name: str = "early-stopping") -> Table | None:
    """Per arm: runs, epochs run of the epochs at the cap, and training hours with and without early stopping."""
    if savings.is_empty():
        return None
    body = []
    for row in savings.iter_rows(named=True):
        share = row["epochs_run"] / row["epochs_at_cap"] if row["epochs_at_cap"] else None
        body.append(Row(row["arm"], (
            Cell(text=str(row["runs"])), Cell(text=str(row["cap"])),
            Cell(text=f"{row['epochs_run']} / {row['epochs_at_cap']}" + ("" if share is None else f" ({share:.0%})")),
            Cell(text=f"{row['train_hours']:.2f}"), Cell(text=f"{row['train_hours_at_cap']:.2f}"),
        )))  # fmt: skip
    columns = tuple(
        Column("", name, ranked=False) for name in ("Runs", "Cap", "Epochs run / at cap", "Training hours", "At cap (est.)")
    )
    caption = (
        "What early stopping saved, per arm (tune trials and replicates): the epochs its runs trained of the epochs the cap "
        "(train.epochs) would have trained, and their training hours beside an estimate of the hours at the cap (each run's "
        "training time per epoch times its cap; start-up and evaluation left out)."
    )
    return Table(name, caption, "Arm", columns, tuple(body))


def chosen_table(chosen: pl.DataFrame, name: str = "chosen-hyperparameters") -> Table | None:
    """Per tuned arm, the searched values chosen on dev and the dev score of that trial; blank where
    an arm did not search a parameter. None when no arm was tuned."""
    if chosen.is_empty():
        return None
    params = [c for c in chosen.columns if c.startswith(PARAM_PREFIX) and chosen[c].null_count() < chosen.height]
    scores = [c for c in chosen.columns if c.startswith("dev_best_")]
    body = []
    for row in sorted(chosen.iter_rows(named=True), key=lambda r: natural_key(r["arm"])):
        cells = [Cell(text=_value_text(row[p])) for p in params]
        cells += [Cell(value=row[s]) for s in scores]
        body.append(Row(str(row["arm"]), tuple(cells)))
    columns = tuple(Column("", p.removeprefix(PARAM_PREFIX), ranked=False) for p in params)
    columns += tuple(Column("", s, ranked=False) for s in scores)
    caption = (
        "Hyper-parameters chosen on dev for each tuned arm: the searched values of its trial with the best dev score, "
        "which every replicate of the arm re-trained; blank where the arm did not search the parameter."
    )
    return Table(
        name, caption, "Arm", columns, tuple(body),
        ("Arms without a search space went straight to their replicates and are not listed.",),
    )


def _value_text(value: object) -> str:
    """A chosen value as written in a spec: numbers to 4 significant digits (2e-05, 0.3), others as they are."""
    if value is None:
        return ""
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def paper_and_source(paper: str, source: str | None) -> str:
    """The Paper cell: the citation, then where the claim's `source` says the paper states it.

    A spec's `paper` often names a table or figure too ("Nguyen et al. 2023a, Table 2"), which its
    `source` repeats; the cell keeps the author-year citation before the source. A report older than
    `source` has none: the `paper` field alone.
    """
    if not source:
        return paper
    citation = _CITATION.match(paper)
    return f"{citation.group(0) if citation else paper}, {source}"


_CITATION = re.compile(r".*?\b(?:19|20)\d\d[a-z]?\b")  # up to the first year: "Nguyen et al. 2023a"


def verdicts_table(verdicts: pl.DataFrame, name: str = "verdicts") -> Table | None:
    """One row per claim (and setting), the verdict first: the verdict gated by convergence, its
    evidence (confirmatory, or exploratory and why), the metric, the comparison, the paper's effect,
    ours with its interval, the p the rule uses (or none), the decided look's margin over its
    boundary, the units, the direction and magnitude verdicts, the design's power, the paper and
    where it states the claim, then both arms' tuning effort with the epochs trained beside the cap.
    A `report` column (a table of many reports) adds a link to each report. None without claims."""
    if verdicts.is_empty():
        return None
    linked = "report" in verdicts.columns
    body = []
    for row in verdicts.iter_rows(named=True):
        text = verdict_text(row)
        effort = " / ".join(
            f"{row[f'{side}_trials'] or 0} trials ({row[f'{side}_searched'] or 'nothing searched'}), {epochs_text(row, side)}"
            for side in ("method", "partner")
        )
        cells = [Cell(text=f"[{row['report']}]({row['report']}/report.md)")] if linked else []
        cells += [Cell(text=t) for t in (
            text.verdict, text.evidence, text.metric, text.comparison, text.where, text.paper, text.delta, text.interval,
            text.p, text.margin, text.units, text.direction, text.magnitude, text.power,
            paper_and_source(row["paper"], row.get("source")), effort,
        )]  # fmt: skip
        body.append(Row(row["claim"], tuple(cells)))
    names = (
        *(("Report",) if linked else ()), "Verdict", "Evidence", "Metric", "Comparison", "Where", "Paper's effect", "Ours (Δ)",
        "Interval", "p (the rule's)", "Margin (t over boundary)", "Units", "Direction", "Magnitude", "Power; units for 0.8",
        "Paper", "Tuning: method / partner (epochs trained of the cap)",
    )  # fmt: skip
    caption = (
        "Every claim of the spec by one rule, on units (partitions where the runs have several, else seeds; a partition's "
        "pairs averaged). Direction: the interval wholly on the paper's side of zero -> reproduced, wholly on the other -> "
        "opposite, else inconclusive (in a setting the paper never ran, an extrapolation: extends / does not extend, never "
        "opposite); a claim that the methods are on par: the interval within the margin -> equivalent, "
        "wholly beyond it -> not equivalent. Magnitude, where the spec declares the setting comparable to the paper's: ours "
        "minus the paper's effect (with the paper's standard error where printed) -> consistent, smaller, larger or "
        "inconclusive; anywhere, whether the paper's effect lies outside our interval. Verdict: the direction when every run "
        "behind the pairs stopped by patience (converged), else inconclusive. Evidence: confirmatory only where a "
        "registration committed before the claim's first test evaluation stands behind its runs, else exploratory and why. "
        "The interval bounds the mean difference at the claim's level in the family of all claims (Holm for a fixed design, "
        "the repeated interval of the look it stopped at for a sequential one). p: the one the rule is equivalent to (p <= "
        "alpha): Holm's for a fixed design (the TOST's for on par), the stage-wise p of a stopped sequential design, none "
        "while a sequential claim has looks to come or is on par. Margin: a decided row's |t| minus its look's boundary. "
        "Power: the design's at its most units at the paper's effect with the observed sd; verdicts.parquet has every column."
    )
    return Table(name, caption, "Claim", tuple(Column("", n, ranked=False) for n in names), tuple(body))
