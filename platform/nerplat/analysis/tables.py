"""Paper-style tables as plain data: built from summary and test frames, rendered by `render`.

Layouts (the papers' tables they reproduce):
  size table        AUC papers' Table 2: methods x (training size x P, R, F1), mean with SE subscript
  comparison table  MoM Table 3: methods x (dataset x P, R, F1), delta to baseline, significance mark
  grid table        resampling Tables 2-5: sampler/loss x (encoder x head) F1, blank where not run
  per-type table    resampling Tables 11-14: entity types x (method x P, R, F1), arrows vs baseline
  dataset table     every paper's Table 1: sentences, tokens, mentions and % B/I/O per split
  size-factor table resampling Table 6: training-set size factor of each sampler per dataset
  sampler table     resampling Tables 2-5 read across: per method, each sampler against the
                    reference sampler (the original data), deltas and paired-test marks
  dev-curve table   per cell: mean dev score per epoch, share of replicates that selected the last
                    epoch, and the convergence verdict (`convergence`)
  tests table       every paired test behind the marks, with raw and Holm-adjusted p-values and power
  chosen table      per tuned arm, the hyper-parameters chosen on dev and the dev score they reached
Cells of a budget that did not converge carry ‡ and a footnote with the rule.
Best and second best of a ranked column are marked (bold, underlined) on the printed values, so
values that print the same share a rank.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

import polars as pl

from nerplat.analysis.convergence import RULE
from nerplat.analysis.run_frames import PARAM_PREFIX
from nerplat.analysis.settings import AnalysisSettings

HEADLINE = (("precision", "P"), ("recall", "R"), ("f1", "F1"))


@dataclass(frozen=True)
class Cell:
    """One table cell: a number (with optional SE, delta, mark) or a text, or blank when neither."""

    value: float | None = None
    se: float | None = None
    sd: float | None = None  # spread over replicates: LaTeX prints mean ± sd
    delta: float | None = None
    significant: bool = False
    arrow: Literal["", "up", "down"] = ""
    text: str | None = None
    rank: int | None = None  # 1: best in its column (bold), 2: second (underlined)
    digits: int = 4
    unconverged: bool = False  # the cell's epoch budget did not converge: marked ‡

    def number(self) -> str:
        return "" if self.value is None else f"{self.value:.{self.digits}f}"


@dataclass(frozen=True)
class Column:
    group: str  # spanning header above `name`; "" when the table has one header row
    name: str
    ranked: bool = True


@dataclass(frozen=True)
class Row:
    label: str
    cells: tuple[Cell, ...]
    rule_above: bool = False  # a separating line before this row (e.g. an average row)


@dataclass(frozen=True)
class Table:
    name: str  # file stem, unique within a report
    caption: str
    row_header: str
    columns: tuple[Column, ...]
    rows: tuple[Row, ...]
    notes: tuple[str, ...] = field(default=())

    def has_groups(self) -> bool:
        return any(c.group for c in self.columns)


def ranked(table: Table) -> Table:
    """Marks best (1) and second best (2) printed value of each ranked column; higher is better."""
    rows = [list(r.cells) for r in table.rows]
    for j, column in enumerate(table.columns):
        if not column.ranked:
            continue
        printed = {float(r[j].number()) for r in rows if r[j].value is not None}
        if len(printed) < 2:
            continue
        best, second = sorted(printed, reverse=True)[:2]
        for r in rows:
            if r[j].value is not None:
                value = float(r[j].number())
                rank = 1 if value == best else 2 if value == second else None
                r[j] = replace(r[j], rank=rank)
    return replace(table, rows=tuple(replace(row, cells=tuple(c)) for row, c in zip(table.rows, rows)))


def convergence_noted(table: Table) -> Table:
    """Adds the ‡ footnote when some cell of the table is marked unconverged."""
    if not any(cell.unconverged for row in table.rows for cell in row.cells):
        return table
    return replace(table, notes=(*table.notes, f"‡ epoch budget not converged ({RULE}); see the dev-curve tables."))


def _unconverged(row: Mapping | None) -> bool:
    return row is not None and row.get("converged") is False


def slug(*parts: str | int | None) -> str:
    """A file-name-safe stem from label parts: slug("size", "conll2003", "low_resource(k=1)")."""
    text = "-".join(str(p) for p in parts if p not in (None, ""))
    return re.sub(r"[^a-z0-9_.]+", "-", text.lower()).strip("-.")


def natural_key(value: object) -> tuple:
    """Sort key reading digit runs as numbers: 'size=20' before 'size=100'; None last."""
    if value is None:
        return ((1,),)
    if isinstance(value, tuple):
        return tuple(natural_key(v) for v in value)
    return ((0,), *((0, int(t)) if t.isdigit() else (1, t) for t in re.split(r"(\d+)", str(value)) if t))


def method_order(methods: Sequence[str], baseline: str | None) -> list[str]:
    """Baseline first, then the others alphabetically: the papers list the baseline on top."""
    rest = sorted(m for m in set(methods) if m != baseline)
    return ([baseline] if baseline in methods else []) + rest


def _cell_lookup(summary: pl.DataFrame, keys: Sequence[str]) -> dict[tuple, dict]:
    return {tuple(row[k] for k in keys): row for row in summary.iter_rows(named=True)}


def _mean(row: Mapping | None, digits: int, *, with_se: bool = False, **marks) -> Cell:
    """The cell of one summary row with `digits` decimals (blank when the setting was not run)."""
    if row is None:
        return Cell()
    se = row["se"] if with_se else None
    return Cell(value=row["mean"], se=se, sd=row.get("sd"), digits=digits, unconverged=_unconverged(row), **marks)


def _n_note(rows: pl.DataFrame) -> str:
    if rows.is_empty():
        return "no replicates"
    low, high = rows["n"].min(), rows["n"].max()
    if low == high:
        return f"n = {low} replicate{'s' if low != 1 else ''} per cell"
    return f"n = {low}-{high} replicates per cell"


def _where(*pairs: tuple[str, str | None]) -> str:
    return ", ".join(f"{k} {v}" for k, v in pairs if v)


def _axis_groups(frame: pl.DataFrame, keys: Sequence[str]) -> list[tuple[dict, pl.DataFrame]]:
    """Sub-frames per distinct value of `keys`, in sorted order, with the key values as a dict."""
    if frame.is_empty():
        return []
    groups = frame.partition_by(list(keys), as_dict=True, maintain_order=True)
    return [(dict(zip(keys, k)), groups[k]) for k in sorted(groups, key=natural_key)]


def size_tables(summary: pl.DataFrame, settings: AnalysisSettings, axes: Sequence[str] = ()) -> list[Table]:
    """One table per dataset, sampler family (and axis value) that was run at two or more sizes."""
    metrics = {settings.headline(m): short for m, short in HEADLINE}
    rows = summary.filter(pl.col("metric").is_in(list(metrics)))
    tables = []
    for key, part in _axis_groups(rows, ["dataset", "sampler_family", *axes]):
        sizes = sorted(part["size"].drop_nulls().unique().to_list())
        if len(sizes) < 2:
            continue
        lookup = _cell_lookup(part, ["method", "size", "metric"])
        columns = tuple(Column(str(s), short) for s in sizes for short in metrics.values())
        body = tuple(
            Row(m, tuple(_mean(lookup.get((m, s, metric)), settings.decimals, with_se=True) for s in sizes for metric in metrics))
            for m in method_order(part["method"].to_list(), settings.baseline)
        )
        where = _where(("dataset", key["dataset"]), ("sampler", key["sampler_family"]), *((a, key[a]) for a in axes))
        caption = (
            f"{_metric_words(settings)} by training size ({where}). Mean over replicates with its "
            f"non-parametric bootstrap standard error, SE ({settings.bootstrap_resamples} resamples); "
            "best in bold, second underlined."
        )
        name = slug("size", key["dataset"], key["sampler_family"], *(key[a] for a in axes))
        tables.append(convergence_noted(ranked(Table(name, caption, "Method", columns, body, (_n_note(part),)))))
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
    for key, part in _axis_groups(rows, ["sampler", *axes]):
        datasets = sorted(part["dataset"].unique().to_list(), key=natural_key)
        lookup = _cell_lookup(part, ["method", "dataset", "metric"])
        family = comparison_family(key["sampler"], [key[a] for a in axes])
        family_tests = tests.filter(pl.col("family") == family) if "family" in tests.columns else tests.clear()
        marks = {
            (r["method"], r["dataset"], r["metric"]): r["significant"]
            for r in family_tests.iter_rows(named=True)
            if r["partner"] == settings.baseline
        }
        body = []
        for method in method_order(part["method"].to_list(), settings.baseline):
            cells = []
            for dataset in datasets:
                for metric in metrics:
                    row = lookup.get((method, dataset, metric))
                    base = lookup.get((settings.baseline, dataset, metric))
                    delta = None
                    if row and base and method != settings.baseline:
                        delta = row["mean"] - base["mean"]
                    cells.append(_mean(row, settings.decimals, delta=delta, significant=marks.get((method, dataset, metric), False)))
            body.append(Row(method, tuple(cells)))
        columns = tuple(Column(d, short) for d in datasets for short in metrics.values())
        where = _where(("sampler", key["sampler"]), *((a, key[a]) for a in axes))
        caption = f"{_metric_words(settings)} per dataset ({where}). Mean over replicates; best in bold, second underlined."
        notes = [_n_note(part)]
        if settings.baseline:
            tested = _tests_per_metric(family_tests.filter(pl.col("partner") == settings.baseline))
            caption += f" In parentheses: difference to {settings.baseline}."
            if tested:
                notes.append(
                    f"† p < {settings.alpha} in a two-sided {_test_words(settings)} against {settings.baseline} over "
                    f"runs matched by seed and partition, Holm-corrected within each metric across its {tested} tests in this table."
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
    for key, part in _axis_groups(rows, ["dataset"]):
        models = sorted({(r["encoder"], r["head"]) for r in part.iter_rows(named=True)}, key=natural_key)
        if len(models) < 2:
            continue
        row_keys = ["sampler", "objective"]
        if part.group_by([*row_keys, "encoder", "head"]).len()["len"].max() > 1:
            row_keys = ["sampler", "method"]  # several methods share a loss: name them instead
        lookup = _cell_lookup(part, [*row_keys, "encoder", "head"])
        entries = sorted({tuple(r[k] for k in row_keys) for r in part.iter_rows(named=True)}, key=natural_key)
        spans = [sum((*entry, encoder, head) in lookup for encoder, head in models) for entry in entries]
        if max(spans) < 2:
            continue  # each method runs with one model only: the comparison table already shows it
        one_sampler = len({e[0] for e in entries}) == 1
        one_loss = len({e[1] for e in entries}) == 1
        body = tuple(
            Row(
                _grid_label(entry, one_sampler, one_loss),
                tuple(_mean(lookup.get((*entry, encoder, head)), settings.decimals) for encoder, head in models),
            )
            for entry in entries
        )
        columns = tuple(Column(str(encoder), str(head)) for encoder, head in models)
        caption = (
            f"{settings.split.capitalize()} {settings.average}-averaged F1 on {key['dataset']} by model and output "
            "layer. Mean over replicates; blank where a method does not apply; best in each column in bold, second underlined."
        )
        label = "Method" if one_sampler else "Sampler" if one_loss else "Sampler + loss"
        tables.append(convergence_noted(ranked(Table(slug("grid", key["dataset"]), caption, label, columns, body, (_n_note(part),)))))
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
    for key, part in _axis_groups(summary, ["dataset", "sampler", *axes]):
        lookup = _cell_lookup(part, ["method", "metric"])
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
                    cells.append(_mean(row, settings.decimals, arrow=arrow))
            cells.append(Cell(value=support.get(label), digits=0))
            body.append(Row(label, tuple(cells), rule_above=is_average))
        columns = tuple(Column(m, short, ranked=False) for m in methods for _, short in HEADLINE)
        columns += (Column("", "Support", ranked=False),)
        where = _where(("dataset", key["dataset"]), ("sampler", key["sampler"]), *((a, key[a]) for a in axes))
        caption = (
            f"Per-entity-type {split} precision (P), recall (R) and F1 ({where}), rarest type first. "
            "Mean over replicates; Support: gold mentions of the type in the split."
        )
        if settings.baseline in methods:
            caption += f" Arrows: higher or lower than {settings.baseline}."
        name = slug("per-type", key["dataset"], key["sampler"], *(key[a] for a in axes))
        tables.append(convergence_noted(Table(name, caption, "Entity type", columns, tuple(body), (_n_note(part),))))
    return tables


def _has(part: pl.DataFrame, metric: str) -> bool:
    return part.filter(pl.col("metric") == metric).height > 0


def _mean_over_methods(part: pl.DataFrame, metric: str) -> float | None:
    values = part.filter(pl.col("metric") == metric)["mean"]
    return None if values.is_empty() else float(values.mean())


def _arrow(value: float, reference: float, digits: int) -> Literal["", "up", "down"]:
    difference = round(value, digits) - round(reference, digits)
    return "up" if difference > 0 else "down" if difference < 0 else ""


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
            cells.append(Cell(text="" if split is None else f"{split['pct_B']:.1f} / {split['pct_I']:.1f} / {split['pct_O']:.1f}"))
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
        cells += [Cell(text=_p_text(r["p_value"])), Cell(text=_p_text(r["p_holm"]))]
        cells.append(Cell(value=r.get("mde"), digits=settings.decimals))
        cells.append(Cell(text="n/a" if r.get("n_needed") is None else str(r["n_needed"])))
        body.append(Row(_test_label(r), tuple(cells)))
    columns = tuple(Column("", h, ranked=False) for h in headers)
    notes = (
        f"† Holm-adjusted p < {settings.alpha} within each metric across its {_tests_per_metric(tests)} tests of this table "
        f"({_test_words(settings)}, two-sided).",
        f"MDE: the smallest mean difference this test detects with 80% power at alpha {settings.alpha} with the pairs "
        "used, from the sd of the paired differences; Pairs needed: pairs that would detect the observed Δ with 80% power "
        "(n/a: no difference or no spread). A test that is not significant could not reliably have detected a difference smaller than its MDE.",
    )
    return convergence_noted(Table(name, caption, "Comparison", columns, tuple(body), notes))


def _test_label(row: Mapping) -> str:
    if row.get("partner_sampler") not in (None, row["sampler"]):
        return f"{row['method']}: {row['sampler']} vs {row['partner_sampler']}"
    return f"{row['method']} vs {row['partner']}"


def sampler_tables(summary: pl.DataFrame, tests: pl.DataFrame, settings: AnalysisSettings, axes: Sequence[str] = ()) -> list[Table]:
    """Per dataset, method (and axis value) run under two or more sampler settings: each sampler's P, R
    and F1 with its difference to `settings.reference_sampler` and the Holm-corrected paired-test mark."""
    reference = settings.reference_sampler
    if reference is None:
        return []
    metrics = {settings.headline(m): short for m, short in HEADLINE}
    rows = summary.filter(pl.col("metric").is_in(list(metrics)))
    tables = []
    for key, part in _axis_groups(rows, ["dataset", "method", *axes]):
        labels = sorted(part["sampler_label"].drop_nulls().unique().to_list(), key=natural_key)
        if len(labels) < 2 or reference not in labels:
            continue
        family = sampler_family_name(key["dataset"], key["method"], [key[a] for a in axes])
        family_tests = tests.filter(pl.col("family") == family) if "family" in tests.columns else tests.clear()
        described = dict(part.select("sampler_label", "sampler").unique("sampler_label").iter_rows())
        marks = {(r["sampler"], r["metric"]): r["significant"] for r in family_tests.iter_rows(named=True)}
        lookup = _cell_lookup(part, ["sampler_label", "metric"])
        body = []
        for label in [reference, *(x for x in labels if x != reference)]:
            cells = []
            for metric in metrics:
                row, base = lookup.get((label, metric)), lookup.get((reference, metric))
                delta = row["mean"] - base["mean"] if row and base and label != reference else None
                cells.append(_mean(row, settings.decimals, delta=delta, significant=marks.get((described.get(label), metric), False)))
            body.append(Row(label, tuple(cells)))
        where = _where(("dataset", key["dataset"]), ("method", key["method"]), *((a, key[a]) for a in axes))
        caption = (
            f"{_metric_words(settings)} of each sampler against the {reference} data ({where}). Mean over replicates; "
            f"in parentheses: difference to {reference}; best in bold, second underlined."
        )
        tested = _tests_per_metric(family_tests)
        notes = [_n_note(part)]
        notes.append(
            f"† p < {settings.alpha} in a two-sided {_test_words(settings)} against {reference} over runs matched by seed "
            f"and partition, Holm-corrected within each metric across its {tested} tests in this table."
            if tested else f"No significance test: a {_test_words(settings)} needs two or more runs matched by seed and partition."
        )
        name = slug("samplers", key["dataset"], key["method"], *(key[a] for a in axes))
        tables.append(convergence_noted(ranked(Table(name, caption, "Sampler", tuple(Column("", s) for s in metrics.values()), tuple(body), tuple(notes)))))
    return tables


def sampler_family_name(dataset: str | None, method: str | None, axis_values: Sequence[str | None] = ()) -> str:
    """Name of the Holm family of one sampler table."""
    return slug("samplers", dataset, method, *axis_values)


def dev_curve_tables(curves: pl.DataFrame, verdicts: pl.DataFrame, settings: AnalysisSettings, axes: Sequence[str] = ()) -> list[Table]:
    """Per dataset and sampler (and axis value): methods x evaluated epochs, mean dev score, then the
    share of replicates that selected the last epoch and the convergence verdict."""
    tables = []
    for key, part in _axis_groups(curves, ["dataset", "sampler", *axes]):
        epochs = sorted(part["epoch"].unique().to_list())
        lookup = _cell_lookup(part, ["method", "epoch"])
        same = [pl.col(k).eq_missing(key[k]) for k in ("dataset", "sampler", *axes)]
        verdict = {r["method"]: r for r in verdicts.filter(*same).iter_rows(named=True)} if verdicts.height else {}
        body = []
        for method in method_order(part["method"].to_list(), settings.baseline):
            cells = [_mean(lookup.get((method, e)), settings.decimals) for e in epochs]
            v = verdict.get(method, {})
            share = v.get("last_epoch_share")
            cells.append(Cell(text="n/a" if share is None else f"{share:.0%}"))
            slope = v.get("slope")
            cells.append(Cell(text="n/a" if slope is None else f"{slope:+.4f} (t {v['slope_t']:.1f})"))
            converged = v.get("converged")
            curve = v.get("curve") or "unknown"
            cells.append(Cell(text="unknown" if converged is None else "yes" if converged else f"no ‡ ({curve})"))
            body.append(Row(method, tuple(cells)))
        columns = tuple(Column("Epoch", str(e)) for e in epochs) + (
            Column("", "Last epoch selected", ranked=False), Column("", "Late slope", ranked=False), Column("", "Converged", ranked=False)
        )
        where = _where(("dataset", key["dataset"]), ("sampler", key["sampler"]), *((a, key[a]) for a in axes))
        caption = (
            f"Dev {settings.average} F1 after each evaluated epoch ({where}): mean over replicates; Last epoch selected: "
            "share of replicates whose best dev epoch was the last one; Late slope: the mean curve's slope per epoch over its "
            "last evaluations, with its t statistic against the curve's own noise."
        )
        notes = (_n_note(part), f"Rule: {RULE}. ‡ not converged.")
        tables.append(ranked(Table(slug("dev-curve", key["dataset"], key["sampler"], *(key[a] for a in axes)), caption, "Method", columns, tuple(body), notes)))
    return tables


def _p_text(p: float | None) -> str:
    if p is None:
        return "n/a"
    return "<0.0001" if p < 1e-4 else f"{p:.4f}"


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
    return Table(name, caption, "Arm", columns, tuple(body), ("Arms without a search space went straight to their replicates and are not listed.",))


def _value_text(value: object) -> str:
    """A chosen value as written in a spec: numbers to 4 significant digits (2e-05, 0.3), others as they are."""
    if value is None:
        return ""
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def verdicts_table(verdicts: pl.DataFrame, name: str = "verdicts") -> Table | None:
    """One row per claim (and setting): the paper's effect, ours with its interval, p (Holm), pairs,
    convergence and the verdict, then both arms' tuning effort. None without claims."""
    if verdicts.is_empty():
        return None
    body = []
    for row in verdicts.iter_rows(named=True):
        interval = "n/a" if row["ci_low"] is None else f"[{row['ci_low']:+.4f}, {row['ci_high']:+.4f}]"
        look = "" if row["decided_look"] is None else f", look {row['decided_look'] + 1}"
        effort = " / ".join(
            f"{row[f'{side}_trials'] or 0} trials ({row[f'{side}_searched'] or 'nothing searched'}), {row[f'{side}_epochs'] or '?'} ep"
            for side in ("method", "partner")
        )
        where = ", ".join(str(row[k]) for k in ("dataset", "sampler", "size") if row[k] is not None)
        cells = (
            Cell(text=f"{row['method']} vs {row['partner']}"),
            Cell(text=where),
            Cell(text=row["direction"] if row["paper_effect"] is None else f"{row['paper_effect']:+.4f}"),
            Cell(text="n/a" if row["delta"] is None else f"{row['delta']:+.4f}"),
            Cell(text=interval),
            Cell(text=_p_text(row["p_holm"])),
            Cell(text=str(row["n_pairs"])),
            Cell(text="yes" if row["converged"] else "no"),
            Cell(text=f"{row['verdict']}{look}"),
            Cell(text=effort),
        )
        body.append(Row(row["claim"], cells))
    names = ("Comparison", "Where", "Paper", "Ours (Δ)", "Interval", "p (Holm)", "Pairs", "Converged", "Verdict", "Tuning: method / partner")
    caption = (
        "Every claim of the spec by one rule: not converged -> inconclusive; interval wholly on the paper's side of zero -> "
        "reproduced; interval excludes the paper's effect -> contradicted; otherwise inconclusive. The interval bounds the "
        "paired difference at the claim's level in the family of all claims (Holm for a fixed design, the repeated interval "
        "of the look it stopped at for a sequential one); verdicts.parquet has every column."
    )
    return Table(name, caption, "Claim", tuple(Column("", n, ranked=False) for n in names), tuple(body))
