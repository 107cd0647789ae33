"""Paper-style comparison tables as plain data (`table_model.py`), built from summary and test
frames, rendered by `render`; the tables around them (datasets, dev curves, chosen values,
verdicts) are `context_tables.py`.

Layouts (the papers' tables they reproduce):
  size table        AUC papers' Table 2: methods x (training size x P, R, F1), mean with SE subscript
  comparison table  MoM Table 3: methods x (dataset x P, R, F1), delta to baseline, significance mark
  grid table        resampling Tables 2-5: sampler/loss x (encoder x head) F1, blank where not run
  per-type table    resampling Tables 11-14: entity types x (method x P, R, F1), arrows vs baseline
  sampler table     resampling Tables 2-5 read across: per method, each sampler against the
                    reference sampler (the original data), deltas and paired-test marks
  tests table       every paired test behind the marks, with raw and Holm-adjusted p-values and power
Cells of a budget that did not converge carry ‡ and a footnote with the rule.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Literal

import polars as pl

from nerplat.analysis.settings import AnalysisSettings
from nerplat.analysis.table_model import (
    Cell, Column, Row, Table, axis_groups, cell_lookup, convergence_noted, mean_cell, method_order, n_note, natural_key, p_text,
    ranked, slug, where_text,
)  # fmt: skip

HEADLINE = (("precision", "P"), ("recall", "R"), ("f1", "F1"))


def size_tables(summary: pl.DataFrame, settings: AnalysisSettings, axes: Sequence[str] = ()) -> list[Table]:
    """One table per dataset, sampler family (and axis value) that was run at two or more sizes."""
    metrics = {settings.headline(m): short for m, short in HEADLINE}
    rows = summary.filter(pl.col("metric").is_in(list(metrics)))
    tables = []
    for key, part in axis_groups(rows, ["dataset", "sampler_family", *axes]):
        sizes = sorted(part["size"].drop_nulls().unique().to_list())
        if len(sizes) < 2:
            continue
        lookup = cell_lookup(part, ["method", "size", "metric"])
        columns = tuple(Column(str(s), short) for s in sizes for short in metrics.values())
        body = tuple(
            Row(m, tuple(
                mean_cell(lookup.get((m, s, metric)), settings.decimals, with_se=True) for s in sizes for metric in metrics
            ))
            for m in method_order(part["method"].to_list(), settings.baseline)
        )
        where = where_text(("dataset", key["dataset"]), ("sampler", key["sampler_family"]), *((a, key[a]) for a in axes))
        caption = (
            f"{_metric_words(settings)} by training size ({where}). Mean over replicates with its "
            f"non-parametric bootstrap standard error, SE ({settings.bootstrap_resamples} resamples); "
            "best in bold, second underlined."
        )
        name = slug("size", key["dataset"], key["sampler_family"], *(key[a] for a in axes))
        tables.append(convergence_noted(ranked(Table(name, caption, "Method", columns, body, (n_note(part),)))))
    return tables


def _metric_words(settings: AnalysisSettings) -> str:
    return f"{settings.split.capitalize()} {settings.average}-averaged precision (P), recall (R) and F1"


def comparison_tables(
    summary: pl.DataFrame,
    tests: pl.DataFrame,
    missing: pl.DataFrame,
    settings: AnalysisSettings,
    axes: Sequence[str] = (),
) -> list[Table]:
    """One table per sampler (and axis value): methods x datasets x (P, R, F1), deltas to baseline.

    `tests` must carry `p_holm`/`significant` adjusted within the family of this table (see
    `comparison_family`), so the marks are Holm-corrected across exactly the deltas shown.
    """
    metrics = {settings.headline(m): short for m, short in HEADLINE}
    rows = summary.filter(pl.col("metric").is_in(list(metrics)))
    tables = []
    for key, part in axis_groups(rows, ["sampler", *axes]):
        datasets = sorted(part["dataset"].unique().to_list(), key=natural_key)
        lookup = cell_lookup(part, ["method", "dataset", "metric"])
        family = comparison_family(key["sampler"], [key[a] for a in axes])
        family_tests = tests.filter(pl.col("family") == family) if "family" in tests.columns else tests.clear()
        against_baseline = [r for r in family_tests.iter_rows(named=True) if r["partner"] == settings.baseline]
        marks = {(r["method"], r["dataset"], r["metric"]): r["significant"] for r in against_baseline}
        # Over matched runs: where arms ran on different units (a sequential claim's arms stop at
        # different looks), a difference of the two means would compare different partitions.
        paired = {(r["method"], r["dataset"], r["metric"]): r["delta"] for r in against_baseline}
        body = []
        for method in method_order(part["method"].to_list(), settings.baseline):
            cells = []
            for dataset in datasets:
                for metric in metrics:
                    row = lookup.get((method, dataset, metric))
                    base = lookup.get((settings.baseline, dataset, metric))
                    delta = paired.get((method, dataset, metric))
                    if delta is None and row and base and method != settings.baseline:
                        delta = row["mean"] - base["mean"]
                    cells.append(mean_cell(
                        row, settings.decimals, delta=delta, significant=marks.get((method, dataset, metric), False)
                    ))
            body.append(Row(method, tuple(cells)))
        columns = tuple(Column(d, short) for d in datasets for short in metrics.values())
        where = where_text(("sampler", key["sampler"]), *((a, key[a]) for a in axes))
        caption = f"{_metric_words(settings)} per dataset ({where}). Mean over replicates; best in bold, second underlined."
        notes = [n_note(part)]
        if settings.baseline:
            tested = _tests_per_metric(family_tests.filter(pl.col("partner") == settings.baseline))
            caption += (
                f" In parentheses: difference to {settings.baseline} over runs matched by seed and partition "
                "(of the two means where fewer than two runs match)."
            )
            if tested:
                notes.append(
                    f"† p < {settings.alpha} in a two-sided {_test_words(settings)} against {settings.baseline} over "
                    f"runs matched by seed and partition, Holm-corrected within each metric across its {tested} tests "
                    "in this table."
                )
            else:
                notes.append(f"No significance test: a {_test_words(settings)} needs two or more matched replicates.")
            same_table = [pl.col(k).eq_missing(key[k]) for k in ("sampler", *axes)]
            unpaired = missing.filter(pl.col("partner") == settings.baseline, *same_table) if missing.height else missing
            if unpaired.height:
                runs = "1 run" if unpaired.height == 1 else f"{unpaired.height} runs"
                notes.append(f"{runs} without a matched partner left out of the tests (see missing_partners.csv).")
        name = slug("comparison", key["sampler"], *(key[a] for a in axes))
        tables.append(convergence_noted(ranked(Table(name, caption, "Method", columns, tuple(body), tuple(notes)))))
    return tables


def _tests_per_metric(tests: pl.DataFrame) -> int:
    """Size of the largest Holm family (tests of one metric) among `tests`."""
    counts = tests.filter(pl.col("p_value").is_not_null()).group_by("metric").len()
    return int(counts["len"].max()) if counts.height else 0


def comparison_family(sampler: str | None, axis_values: Sequence[str | None] = ()) -> str:
    """Name of the Holm family of one comparison table."""
    return slug("comparison", sampler, *axis_values)


def _test_words(settings: AnalysisSettings) -> str:
    return "paired t-test" if settings.test == "paired_t" else "Wilcoxon signed-rank test"


def grid_tables(summary: pl.DataFrame, settings: AnalysisSettings) -> list[Table]:
    """Per dataset with two or more (encoder, head) combinations: rows sampler/loss, columns model x head."""
    metric = settings.headline("f1")
    rows = summary.filter(pl.col("metric") == metric)
    tables = []
    for key, part in axis_groups(rows, ["dataset"]):
        models = sorted({(r["encoder"], r["head"]) for r in part.iter_rows(named=True)}, key=natural_key)
        if len(models) < 2:
            continue
        row_keys = ["sampler", "objective"]
        if part.group_by([*row_keys, "encoder", "head"]).len()["len"].max() > 1:
            row_keys = ["sampler", "method"]  # several methods share a loss: name them instead
        lookup = cell_lookup(part, [*row_keys, "encoder", "head"])
        entries = sorted({tuple(r[k] for k in row_keys) for r in part.iter_rows(named=True)}, key=natural_key)
        spans = [sum((*entry, encoder, head) in lookup for encoder, head in models) for entry in entries]
        if max(spans) < 2:
            continue  # each method runs with one model only: the comparison table already shows it
        one_sampler = len({e[0] for e in entries}) == 1
        one_loss = len({e[1] for e in entries}) == 1
        body = tuple(
            Row(
                _grid_label(entry, one_sampler, one_loss),
                tuple(mean_cell(lookup.get((*entry, encoder, head)), settings.decimals) for encoder, head in models),
            )
            for entry in entries
        )
        columns = tuple(Column(str(encoder), str(head)) for encoder, head in models)
        caption = (
            f"{settings.split.capitalize()} {settings.average}-averaged F1 on {key['dataset']} by model and output "
            "layer. Mean over replicates; blank where a method does not apply; best in each column in bold, second underlined."
        )
        label = "Method" if one_sampler else "Sampler" if one_loss else "Sampler + loss"
        tables.append(convergence_noted(ranked(Table(
            slug("grid", key["dataset"]), caption, label, columns, body, (n_note(part),)
        ))))
    return tables


def _grid_label(entry: tuple, one_sampler: bool, one_loss: bool) -> str:
    sampler, loss = entry
    if one_sampler:
        return str(loss)
    if one_loss:
        return str(sampler)
    return f"{sampler} + {loss}"


def entity_types(metrics: Sequence[str], split: str) -> list[str]:
    pattern = re.compile(rf"^{split}_type_(.+)_f1$")
    return sorted({m.group(1) for name in metrics if (m := pattern.match(name))})


def per_type_tables(summary: pl.DataFrame, settings: AnalysisSettings, axes: Sequence[str] = ()) -> list[Table]:
    """Per dataset and sampler: entity types (rarest first) x methods x (P, R, F1), macro average last."""
    split = settings.split
    types = entity_types(summary["metric"].unique().to_list(), split)
    if not types:
        return []
    tables = []
    for key, part in axis_groups(summary, ["dataset", "sampler", *axes]):
        lookup = cell_lookup(part, ["method", "metric"])
        methods = method_order(part["method"].to_list(), settings.baseline)
        support = {t: _mean_over_methods(part, f"{split}_type_{t}_support") for t in types}
        present = sorted((t for t in types if support[t] is not None or _has(part, f"{split}_type_{t}_f1")),
                         key=lambda t: (support[t] if support[t] is not None else float("inf"), t))
        rows_spec = [(t, f"{split}_type_{t}_{{}}", False) for t in present]
        rows_spec.append(("Macro-avg", f"{split}_macro_{{}}", True))
        body = []
        for label, pattern, is_average in rows_spec:
            cells = []
            for method in methods:
                for measure, _ in HEADLINE:
                    row = lookup.get((method, pattern.format(measure)))
                    base = lookup.get((settings.baseline, pattern.format(measure)))
                    arrow = ""
                    if row and base and method != settings.baseline:
                        arrow = _arrow(row["mean"], base["mean"], settings.decimals)
                    cells.append(mean_cell(row, settings.decimals, arrow=arrow))
            cells.append(Cell(value=support.get(label), digits=0))
            body.append(Row(label, tuple(cells), rule_above=is_average))
        columns = tuple(Column(m, short, ranked=False) for m in methods for _, short in HEADLINE)
        columns += (Column("", "Support", ranked=False),)
        where = where_text(("dataset", key["dataset"]), ("sampler", key["sampler"]), *((a, key[a]) for a in axes))
        caption = (
            f"Per-entity-type {split} precision (P), recall (R) and F1 ({where}), rarest type first. "
            "Mean over replicates; Support: gold mentions of the type in the split."
        )
        if settings.baseline in methods:
            caption += f" Arrows: higher or lower than {settings.baseline}."
        name = slug("per-type", key["dataset"], key["sampler"], *(key[a] for a in axes))
        tables.append(convergence_noted(Table(name, caption, "Entity type", columns, tuple(body), (n_note(part),))))
    return tables


def _has(part: pl.DataFrame, metric: str) -> bool:
    return part.filter(pl.col("metric") == metric).height > 0


def _mean_over_methods(part: pl.DataFrame, metric: str) -> float | None:
    values = part.filter(pl.col("metric") == metric)["mean"]
    return None if values.is_empty() else float(values.mean())


def _arrow(value: float, reference: float, digits: int) -> Literal["", "up", "down"]:
    difference = round(value, digits) - round(reference, digits)
    return "up" if difference > 0 else "down" if difference < 0 else ""


def tests_table(tests: pl.DataFrame, settings: AnalysisSettings, name: str, caption: str) -> Table:
    """Every paired test of a family: means, difference, statistic, raw and Holm-adjusted p-value,
    and its power: the minimum detectable effect (MDE) and the pairs needed for the observed Δ."""
    axes = [a for a in ("encoder", "head") if a in tests.columns]
    headers = ("Dataset", "Sampler", *(a.capitalize() for a in axes), "Metric", "Pairs", "Mean", "Partner mean", "Δ",
               "Statistic", "p", "p (Holm)", "MDE", "Pairs needed")
    order = ("method", "partner", "dataset", "sampler", *axes, "metric")
    body = []
    for r in sorted(tests.iter_rows(named=True), key=lambda row: natural_key(tuple(row[k] for k in order))):
        texts = (r["dataset"], r["sampler"], *(r[a] for a in axes), r["metric"], str(r["n_pairs"]))
        cells = [Cell(text=str(t)) for t in texts]
        cells.append(Cell(value=r["mean"], digits=settings.decimals, unconverged=r.get("converged") is False))
        cells.append(Cell(value=r["partner_mean"], digits=settings.decimals, unconverged=r.get("partner_converged") is False))
        cells.append(Cell(value=r["delta"], digits=settings.decimals, significant=bool(r["significant"])))
        cells.append(Cell(value=r["statistic"], digits=3))
        cells += [Cell(text=p_text(r["p_value"])), Cell(text=p_text(r["p_holm"]))]
        cells.append(Cell(value=r.get("mde"), digits=settings.decimals))
        cells.append(Cell(text="n/a" if r.get("n_needed") is None else str(r["n_needed"])))
        body.append(Row(_test_label(r), tuple(cells)))
    columns = tuple(Column("", h, ranked=False) for h in headers)
    notes = (
        f"† Holm-adjusted p < {settings.alpha} within each metric across its {_tests_per_metric(tests)} tests of this table "
        f"({_test_words(settings)}, two-sided).",
        f"MDE: the smallest mean difference this test detects with 80% power at alpha {settings.alpha} with the pairs "
        "used, from the sd of the paired differences; Pairs needed: pairs that would detect the observed Δ with 80% power "
        "(n/a: no difference or no spread). A test that is not significant could not reliably have detected a difference "
        "smaller than its MDE.",
    )
    return convergence_noted(Table(name, caption, "Comparison", columns, tuple(body), notes))


def _test_label(row: Mapping) -> str:
    if row.get("partner_sampler") not in (None, row["sampler"]):
        return f"{row['method']}: {row['sampler']} vs {row['partner_sampler']}"
    return f"{row['method']} vs {row['partner']}"


def sampler_tables(
    summary: pl.DataFrame, tests: pl.DataFrame, settings: AnalysisSettings, axes: Sequence[str] = ()
) -> list[Table]:
    """Per dataset, method (and axis value) run under two or more sampler settings: each sampler's P, R
    and F1 with its difference to `settings.reference_sampler` and the Holm-corrected paired-test mark."""
    reference = settings.reference_sampler
    if reference is None:
        return []
    metrics = {settings.headline(m): short for m, short in HEADLINE}
    rows = summary.filter(pl.col("metric").is_in(list(metrics)))
    tables = []
    for key, part in axis_groups(rows, ["dataset", "method", *axes]):
        labels = sorted(part["sampler_label"].drop_nulls().unique().to_list(), key=natural_key)
        if len(labels) < 2 or reference not in labels:
            continue
        family = sampler_family_name(key["dataset"], key["method"], [key[a] for a in axes])
        family_tests = tests.filter(pl.col("family") == family) if "family" in tests.columns else tests.clear()
        described = dict(part.select("sampler_label", "sampler").unique("sampler_label").iter_rows())
        marks = {(r["sampler"], r["metric"]): r["significant"] for r in family_tests.iter_rows(named=True)}
        lookup = cell_lookup(part, ["sampler_label", "metric"])
        body = []
        for label in [reference, *(x for x in labels if x != reference)]:
            cells = []
            for metric in metrics:
                row, base = lookup.get((label, metric)), lookup.get((reference, metric))
                delta = row["mean"] - base["mean"] if row and base and label != reference else None
                cells.append(mean_cell(
                    row, settings.decimals, delta=delta, significant=marks.get((described.get(label), metric), False)
                ))
            body.append(Row(label, tuple(cells)))
        where = where_text(("dataset", key["dataset"]), ("method", key["method"]), *((a, key[a]) for a in axes))
        caption = (
            f"{_metric_words(settings)} of each sampler against the {reference} data ({where}). Mean over replicates; "
            f"in parentheses: difference to {reference}; best in bold, second underlined."
        )
        tested = _tests_per_metric(family_tests)
        notes = [n_note(part)]
        notes.append(
            f"† p < {settings.alpha} in a two-sided {_test_words(settings)} against {reference} over runs matched by seed "
            f"and partition, Holm-corrected within each metric across its {tested} tests in this table."
            if tested
            else f"No significance test: a {_test_words(settings)} needs two or more runs matched by seed and partition."
        )
        name = slug("samplers", key["dataset"], key["method"], *(key[a] for a in axes))
        tables.append(convergence_noted(ranked(Table(
            name, caption, "Sampler", tuple(Column("", s) for s in metrics.values()), tuple(body), tuple(notes)
        ))))
    return tables


def sampler_family_name(dataset: str | None, method: str | None, axis_values: Sequence[str | None] = ()) -> str:
    """Name of the Holm family of one sampler table."""
    return slug("samplers", dataset, method, *axis_values)


