"""The analysis stage end to end: MLflow experiment -> `reports/<experiment>/` -> summary run.

`analyze_experiment` is what `nerplat run` calls when its trials are done and what
`nerplat analyze` runs alone. The report is built in a temporary sibling folder, logged to MLflow
from there, and only then moved into the report folder (`report_folder`: only files an earlier
report wrote are replaced), so a failed analysis never leaves a half-written report behind.

On the summary run, the report page is the first artifact (`REPORT.md`: upper case sorts before
every other artifact), the whole report folder is `analysis/`, and the headline numbers (mean and
bootstrap SE of precision, recall and F1 per arm) are metrics `<arm label>/<metric>_mean|_se`.
"""

from __future__ import annotations

import base64
import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import polars as pl

from nerplat.analysis import plots as plotting
from nerplat.analysis import context_tables, tables as layouts
from nerplat.analysis.aggregate import metric_columns, summarise
from nerplat.analysis.compare import (
    PairedComparison,
    against_best_other,
    compare_pairs,
    compare_samplers,
    setting_axes,
    with_holm,
    with_power,
)
from nerplat.analysis.convergence import convergence, dev_curves, unconverged_cells, with_cell_convergence, with_convergence
from nerplat.analysis.evidence import DatedRegistration, dated_registrations, with_evidence
from nerplat.analysis.headline import headline_metrics
from nerplat.analysis.registrations import DEFAULT_REGISTRATIONS
from nerplat.analysis.render import EXTENSIONS, FORMATS, RENDERERS, html_page, to_html, to_latex, to_markdown
from nerplat.analysis.run_frames import EPOCH_SCHEMA, ExperimentRuns, fetch_experiment, with_stops_before_learning
from nerplat.analysis.report_folder import install, owned_files, refuse_clashes
from nerplat.analysis.report_inputs import INPUTS_KEY, inputs_digest, unchanged_report
from nerplat.analysis.settings import AnalysisSettings, settings_from_mapping
from nerplat.analysis.stopping_savings import stopping_savings
from nerplat.analysis.table_model import Table, slug
from nerplat.analysis.verdict_context import arm_frame
from nerplat.analysis.verdicts import verdicts
from nerplat.config.trial import DatasetRef
from nerplat.data.corpora import CORPORA, HUB_PREFIX, dataset_problems, load_corpus
from nerplat.data.corpus_stats import corpus_stats
from nerplat.errors import Problem, StorageError, UserInputError
from nerplat.suggest import did_you_mean
from nerplat.track import schema
from nerplat.track.experiment_reader import find_experiment, find_summary_run, open_client, read_plan
from nerplat.track.reports import create_summary_run, log_report
from nerplat.track.store import store_errors

ARTIFACT_PATH = "analysis"  # folder of the summary run's artifacts that holds the report
REPORT_ARTIFACT = "REPORT.md"  # the report page at the top of the summary run's artifacts
WARNING_LINES = 50  # missing partners listed in the report; the CSV has all of them
UNUSABLE_STATUSES = ("failed", "interrupted")  # replicate runs whose metrics are not final


@dataclass(frozen=True)
class Report:
    experiment: str
    out_dir: Path
    files: tuple[Path, ...]  # every file written, inside out_dir
    warnings: tuple[str, ...]
    summary_run_id: str
    unconverged: tuple[str, ...] = ()  # one line per cell whose epoch budget did not converge
    kept: bool = False  # the report in out_dir was built from the same inputs, and kept as it was


def analyze_experiment(
    experiment: str,
    tracking_uri: str,
    out_dir: Path,
    formats: Sequence[str] = ("md", "latex", "html", "csv"),
    settings: AnalysisSettings | None = None,
    *,
    keep_unchanged: bool = False,
    registrations: Path | None = None,
) -> Report:
    """Analyses every replicate and trial run of `experiment`; writes tables, plots and frames to
    `out_dir` (the report folder itself, e.g. `reports/<experiment>`) and logs them to the
    experiment's summary run under `analysis/`.

    `settings` None reads the `analysis` object of the summary run's plan.json (defaults when absent).
    With `keep_unchanged` (`nerplat run`), a report in `out_dir` built from the same inputs
    (`report_inputs`) is kept as it is, and nothing is written. `registrations` is the folder of the
    claims' registrations (`analysis.registrations`; default specs/registered here), which decides
    which verdicts are confirmatory.
    """
    formats = check_formats(formats)
    out_dir = Path(os.path.abspath(out_dir))  # "." has a name and a parent for the scratch folder
    previous = owned_files(out_dir)  # before anything is read or written: refuse a folder no report wrote
    client = open_client(tracking_uri)
    runs = fetch_experiment(client, experiment)
    if settings is None:
        settings = plan_settings(runs)
    if runs.replicates.is_empty() and runs.trials.is_empty():
        raise UserInputError(
            Problem(f"experiment '{experiment}' has no replicate or trial runs to analyse; did `nerplat run` finish?")
        )
    check_methods(runs.replicates, settings)
    registered = dated_registrations(registrations if registrations is not None else DEFAULT_REGISTRATIONS)
    read = {claim: [r.registration.digest, r.registration.intact, str(r.registered_at)] for claim, r in registered.items()}
    digest = inputs_digest(runs, settings, formats, read)
    kept = unchanged_report(out_dir, previous, digest) if keep_unchanged else None
    if kept is not None:
        files = tuple(out_dir / name for name in previous)
        warnings = runs.ignored + tuple(kept.get("warnings", ()))
        return Report(experiment, out_dir, files, warnings, runs.summary_run_id, tuple(kept.get("unconverged", ())), kept=True)
    analysis = analyse(runs.replicates, runs.trials, settings, runs.epochs, runs.chosen, arm_frame(runs.plan), registered)
    failure = f"the report of '{experiment}' could not be written to {out_dir} or logged to {tracking_uri}"
    with storage_failures(failure):
        out_dir.parent.mkdir(parents=True, exist_ok=True)
        scratch = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=out_dir.parent))
    try:
        with storage_failures(failure):
            write_report(experiment, runs, analysis, settings, formats, scratch)
            summary_run_id = runs.summary_run_id or create_summary_run(client, runs.experiment_id, experiment)
            refuse_clashes(scratch, out_dir, previous)
            log_report(
                client, summary_run_id, scratch, artifact_path=ARTIFACT_PATH,
                page=_report_markdown(experiment, settings, analysis, embed_from=scratch), page_name=REPORT_ARTIFACT,
                metrics=headline_metrics(analysis.summary, settings),
            )  # fmt: skip
            built_from = {INPUTS_KEY: digest, "warnings": analysis.warnings, "unconverged": analysis.unconverged}
            files = install(scratch, out_dir, previous, built_from)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return Report(experiment, out_dir, tuple(files), runs.ignored + tuple(analysis.warnings), summary_run_id,
                  tuple(analysis.unconverged))


@contextmanager
def storage_failures(what: str) -> Iterator[None]:
    """A full disk or a read-only folder or store, as one StorageError instead of a traceback.

    Polars reports a failed write as a ComputeError (around the OS error, or as a broken footer),
    the tracking store as one of `store_errors()`."""
    from polars.exceptions import ComputeError

    try:
        yield
    except (OSError, *store_errors(), ComputeError) as error:  # the frames are computed before: a ComputeError here is a write
        raise StorageError(f"{what}: {error}") from error


def check_formats(formats: Sequence[str]) -> tuple[str, ...]:
    unknown = [f for f in formats if f not in FORMATS]
    if unknown or not formats:
        raise UserInputError(Problem(
            f"unknown table format(s) {', '.join(unknown) or '(none given)'}; choose from {', '.join(FORMATS)}", path="--format"
        ))
    return tuple(dict.fromkeys(formats))


def plan_settings(runs: ExperimentRuns) -> AnalysisSettings:
    """Settings from plan.json's `analysis` object on the summary run; defaults without a plan."""
    return settings_from_plan(runs.plan, f"run {runs.summary_run_id}/{schema.PLAN_ARTIFACT}")


def experiment_settings(experiment: str, tracking_uri: str, overrides: dict | None = None) -> AnalysisSettings:
    """Settings of an experiment's plan.json with `overrides` (from flags) on top."""
    client = open_client(tracking_uri)
    found = find_experiment(client, experiment)
    summary = find_summary_run(client, found.experiment_id)
    plan = read_plan(client, summary) if summary else None
    source = f"run {summary.info.run_id}/{schema.PLAN_ARTIFACT}" if summary else "defaults"
    return settings_from_plan(plan, source, overrides)


def settings_from_plan(plan: dict | None, source: str, overrides: dict | None = None) -> AnalysisSettings:
    """The plan's `analysis` object, its `replicate_split` as the split, then `overrides` on top."""
    values = dict((plan or {}).get("analysis") or {})
    if (plan or {}).get("replicate_split"):
        values["split"] = plan["replicate_split"]
    for key in ("claims", "sequential"):  # plan-level parts the analysis needs (older plans lack them)
        if (plan or {}).get(key):
            values[key] = plan[key]
    methods = ((plan or {}).get("resolved_spec") or {}).get("methods") or {}
    display = {name: method["display"] for name, method in methods.items() if isinstance(method, dict) and method.get("display")}
    if display:
        values["display"] = display
    if overrides:
        values.update(overrides)
        source = f"{source} and flags" if plan else "flags"
    return settings_from_mapping(values, source=source)


def check_methods(replicates: pl.DataFrame, settings: AnalysisSettings) -> None:
    """Baseline and comparison pairs must name methods that have replicate runs."""
    if replicates.is_empty():
        return
    known = sorted(replicates["method"].drop_nulls().unique().to_list())
    named = [("baseline", settings.baseline)] if settings.baseline else []
    named += [(f"comparisons[{i}]", m) for i, pair in enumerate(settings.comparisons) for m in pair]
    named += [(f"against_best[{i}]", m) for i, m in enumerate(settings.against_best)]
    problems = []
    for path, method in named:
        if method not in known:
            hint = did_you_mean(method, known)
            problems.append(Problem(f"no replicate runs of method '{method}' (methods: {', '.join(known)}){hint}",
                                    path=f"analysis.{path}"))
    if problems:
        raise UserInputError(problems)


@dataclass(frozen=True)
class Analysis:
    """Every frame, table and plot of one report, before anything is written."""

    summary: pl.DataFrame
    tests: pl.DataFrame
    missing: pl.DataFrame
    unconverged: list[str]
    verdicts: pl.DataFrame  # one row per claim and setting (`analysis.verdicts`); empty without claims
    tables: list[Table]
    plots: list[plotting.Plot]
    warnings: list[str]


def analyse(
    replicates: pl.DataFrame,
    trials: pl.DataFrame,
    settings: AnalysisSettings,
    epochs: pl.DataFrame | None = None,
    chosen: pl.DataFrame | None = None,
    arms: pl.DataFrame | None = None,
    registered: Mapping[str, DatedRegistration] | None = None,
) -> Analysis:
    """Statistics, tables and plots of one experiment's frames; pure (no MLflow, no files).

    `replicates` carry why each run stopped (`run_frames.with_stopping`), which the convergence
    verdicts read; `epochs` (per-epoch dev metrics, `runs.epoch_frame`) gives the dev curves.
    `chosen` (`runs.chosen_frame`) gives the table of the hyper-parameters each tuned arm chose.
    `arms` (`verdict_context.arm_frame` of the plan) gives each claim's tuning effort and cost.
    `registered` (`evidence.dated_registrations`) says which verdicts are confirmatory (`evidence`).
    """
    warnings: list[str] = []
    unfinished = replicates.filter(pl.col("status").is_in(UNUSABLE_STATUSES))
    if unfinished.height:
        listed = ", ".join(f"{r['run_id']} ({r['status']})" for r in unfinished.head(10).iter_rows(named=True))
        more = f" and {unfinished.height - 10} more" if unfinished.height > 10 else ""
        warnings.append(f"{unfinished.height} replicate runs failed or were interrupted and are left out: {listed}{more}")
    epochs = epochs if epochs is not None else pl.DataFrame(schema=EPOCH_SCHEMA)
    usable = with_stops_before_learning(replicates.filter(~pl.col("status").is_in(UNUSABLE_STATUSES).fill_null(True)), epochs)
    axes = setting_axes(usable) if not usable.is_empty() else []
    curve_metric = f"dev_{settings.average}_f1"
    cells = convergence(usable, epochs, curve_metric)
    summary = with_convergence(summarise(usable, metric_columns(usable), settings), cells)
    comparison = paired_comparisons(usable, settings, axes)
    tests = with_cell_convergence(comparison.tests, cells, axes)
    unconverged = unconverged_cells(summary)
    warnings += _missing_warnings(comparison.missing) + unconverged

    judged = with_evidence(verdicts(usable, settings, axes, arms, trials), replicates, registered or {})
    claims = context_tables.verdicts_table(judged)
    tables = [claims] if claims else []
    tables += layouts.size_tables(summary, settings, axes)
    tables += layouts.comparison_tables(summary, tests, comparison.missing, settings, axes)
    tables += layouts.sampler_tables(summary, tests, settings, axes)
    tables += layouts.grid_tables(summary, settings)
    tables += layouts.per_type_tables(summary, settings, axes)
    factors = context_tables.size_factor_table(summary)
    tables += [factors] if factors else []
    stats, absent = dataset_statistics(usable["dataset"].drop_nulls().unique().to_list() if not usable.is_empty() else [])
    if stats:
        tables.append(context_tables.dataset_table(stats))
    if absent:
        warnings.append(f"no corpus statistics for {', '.join(absent)} (not a registered corpus or local folder): "
                        "left out of the dataset table")
    curves = dev_curves(usable, epochs, curve_metric)
    tables += context_tables.dev_curve_tables(curves, cells, settings, axes)
    choices = context_tables.chosen_table(chosen) if chosen is not None else None
    tables += [choices] if choices else []
    saved = context_tables.savings_table(stopping_savings((usable, trials), arms if arms is not None else pl.DataFrame()))
    tables += [saved] if saved else []
    for family, part in tests.partition_by("family", as_dict=True, maintain_order=True).items() if not tests.is_empty() else []:
        tables.append(layouts.tests_table(part, settings, slug("tests", family[0]),
                                          _family_caption(family[0], comparison.best_other, settings)))

    figures = plotting.learning_curves(summary, settings, axes)
    figures += plotting.dev_curves(curves, cells, settings, axes)
    figures += plotting.hyperparameter_curves(trials, settings)
    figures += plotting.displacement_arrows(summary, settings, axes)
    return Analysis(summary, tests, comparison.missing, unconverged, judged, tables, figures, warnings)


BEST_OTHER_FAMILY = "best-other"


def _family_caption(family: str, choices: pl.DataFrame | None, settings: AnalysisSettings) -> str:
    if family.startswith("samplers"):
        return (
            f"Paired tests of family {family}: each sampler against {settings.reference_sampler} for the same method, over "
            "runs matched by dataset, seed and partition; means and Δ over the matched pairs only."
        )
    caption = (
        f"Paired tests of family {family}: each method against its partner over runs matched by dataset, "
        "sampler, size, seed and partition; means and Δ over the matched pairs only."
    )
    if family == BEST_OTHER_FAMILY and choices is not None:
        chosen = "; ".join(
            f"{r['method']} on {r['dataset']} {r['sampler']}: {r['partner']} ({r['dev_score']:.4f})"
            for r in choices.iter_rows(named=True)
        )
        caption += (
            f" The partner is the best other method, chosen from the results: the highest mean dev {settings.average} F1 of "
            f"its replicates in each setting ({chosen}). Selection caveat: the choice is made on dev, not on the "
            f"{settings.split} scores tested, but with few replicates the dev winner is partly luck (winner's curse), so "
            "the partner's dev lead overstates its true lead, while its test scores are unbiased."
        )
    return caption


def paired_comparisons(frame: pl.DataFrame, settings: AnalysisSettings, axes: Sequence[str]) -> PairedComparison:
    """Every paired test with Holm within each family and metric, and power (`best_other`: the
    partners `analysis.against_best` chose).

    Families: one per comparison table (methods against the baseline), one per sampler table
    (samplers against the reference sampler within a method), `pairs` (the spec's named pairs) and
    `best-other` (`analysis.against_best`).
    """
    headline = [settings.headline(m) for m, _ in layouts.HEADLINE]
    metrics = [m for m in headline if m in frame.columns]
    methods = frame["method"].drop_nulls().unique().sort().to_list() if not frame.is_empty() else []
    baseline_pairs = [(m, settings.baseline) for m in methods if settings.baseline and m != settings.baseline]
    against_baseline = compare_pairs(frame, baseline_pairs, metrics, settings.test, axes)
    named = compare_pairs(frame, list(settings.comparisons), metrics, settings.test, axes)
    parts = [
        against_baseline.tests.with_columns(_comparison_family(axes)),
        named.tests.with_columns(pl.lit("pairs").alias("family")),
    ]
    missing = [against_baseline.missing, named.missing]
    if settings.reference_sampler:
        samplers = compare_samplers(frame, settings.reference_sampler, metrics, settings.test, axes)
        parts.append(samplers.tests.with_columns(_sampler_family(axes)))
        missing.append(samplers.missing)
    choices = []
    for method in settings.against_best:
        best = against_best_other(frame, method, f"dev_best_{settings.average}_f1", metrics, settings.test, axes)
        parts.append(best.tests.with_columns(pl.lit(BEST_OTHER_FAMILY).alias("family")))
        missing.append(best.missing)
        choices.append(best.best_other.with_columns(pl.lit(method).alias("method")))
    tests = with_power(with_holm(pl.concat(parts), ["family", "metric"], settings.alpha), settings.alpha)
    missing_frame = pl.concat(missing, how="diagonal_relaxed").unique(maintain_order=True)
    return PairedComparison(tests=tests, missing=missing_frame, best_other=pl.concat(choices) if choices else None)


def _comparison_family(axes: Sequence[str]) -> pl.Expr:
    return pl.struct(["sampler", *axes]).map_elements(
        lambda key: layouts.comparison_family(key["sampler"], [key[a] for a in axes]), return_dtype=pl.String
    ).alias("family")


def _sampler_family(axes: Sequence[str]) -> pl.Expr:
    return pl.struct(["dataset", "method", *axes]).map_elements(
        lambda key: layouts.sampler_family_name(key["dataset"], key["method"], [key[a] for a in axes]), return_dtype=pl.String
    ).alias("family")


def _missing_warnings(missing: pl.DataFrame) -> list[str]:
    lines = []
    for row in missing.head(WARNING_LINES).iter_rows(named=True):
        where = ", ".join(f"{k}={row[k]}" for k in ("dataset", "sampler", "size", "seed", "partition"))
        run = row["run_id"] or row["partner_run_id"]
        lines.append(f"unpaired: {row['method']} vs {row['partner']} at {where} (run {run}): {row['detail']}")
    if missing.height > WARNING_LINES:
        lines.append(f"... and {missing.height - WARNING_LINES} more unpaired runs (missing_partners.csv lists all)")
    return lines


def dataset_statistics(datasets: Sequence[str]) -> tuple[dict[str, dict], list[str]]:
    """Per-split statistics (`nerplat.data.corpus_stats`) of the corpora named by the `dataset` tags.

    Registered corpora and local folders are re-read (well under a second each); hub corpora and
    names that no longer resolve are returned as missing. Returns (stats by dataset, missing).
    """
    found, missing = {}, []
    for dataset in sorted(datasets):
        if dataset.startswith(HUB_PREFIX):
            missing.append(dataset)
            continue
        ref = DatasetRef(name=dataset) if dataset in CORPORA else DatasetRef(path=dataset)
        if dataset_problems(ref):
            missing.append(dataset)
            continue
        found[dataset] = corpus_stats(load_corpus(ref))["splits"]
    return found, missing


def write_report(
    experiment: str, runs: ExperimentRuns, analysis: Analysis, settings: AnalysisSettings, formats: Sequence[str], folder: Path
) -> None:
    """Writes frames, tables, plots and the report pages into `folder`."""
    runs.replicates.write_parquet(folder / "runs.parquet")
    runs.trials.write_parquet(folder / "trials.parquet")
    runs.chosen.write_parquet(folder / "chosen.parquet")
    runs.epochs.write_parquet(folder / "epochs.parquet")  # the dev curves: a report can be judged again from its frames
    analysis.summary.write_parquet(folder / "summary.parquet")
    analysis.tests.write_parquet(folder / "tests.parquet")
    if settings.claims:
        analysis.verdicts.write_parquet(folder / "verdicts.parquet")
    analysis.missing.write_parquet(folder / "missing_partners.parquet")
    analysis.missing.write_csv(folder / "missing_partners.csv")
    (folder / "settings.json").write_text(settings.model_dump_json(indent=2) + "\n", encoding="utf-8")
    table_dir = folder / "tables"
    table_dir.mkdir()
    for table in analysis.tables:
        for fmt in formats:
            renderer = partial(to_latex, names=settings.display) if fmt == "latex" else RENDERERS[fmt]
            text = renderer(table) if fmt != "html" else html_page(table.caption, renderer(table))
            (table_dir / f"{table.name}.{EXTENSIONS[fmt]}").write_text(text, encoding="utf-8")
    plot_dir = folder / "plots"
    for plot in analysis.plots:
        plotting.save(plot, plot_dir)
    (folder / "report.md").write_text(_report_markdown(experiment, settings, analysis), encoding="utf-8")
    if "html" in formats:
        (folder / "report.html").write_text(_report_html(experiment, settings, analysis), encoding="utf-8")


def _settings_line(settings: AnalysisSettings) -> str:
    pairs = ", ".join(f"{a} vs {b}" for a, b in settings.comparisons) or "none"
    return (
        f"baseline {settings.baseline or 'none'}; {settings.test} tests, alpha {settings.alpha}, Holm within each table and "
        f"metric; extra pairs: {pairs}; bootstrap {settings.bootstrap_resamples} resamples, seed {settings.seed}; "
        f"{settings.split} split, {settings.average} averages"
    )


def _report_markdown(experiment: str, settings: AnalysisSettings, analysis: Analysis, embed_from: Path | None = None) -> str:
    """The report page. Its figures link to `plots/` beside it, or, with `embed_from` (the report
    folder), are embedded as data URLs: MLflow's artifact viewer shows an image only from a URL with
    a scheme and prints a relative one as text, so REPORT.md on the summary run carries its figures."""
    lines = [f"# Analysis of experiment `{experiment}`", "", f"Settings: {_settings_line(settings)}.", ""]
    if analysis.warnings:
        lines += ["## Warnings", ""] + [f"- {w}" for w in analysis.warnings] + [""]
    lines += ["## Tables", ""]
    for table in analysis.tables:
        lines += [f"### {table.name}", "", to_markdown(table)]
    if analysis.plots:
        lines += ["## Figures", ""]
        for plot in analysis.plots:
            if embed_from is None:
                lines += [f"![{plot.name}](plots/{plot.name}.png)", "", f"_{plot.caption}_ ([SVG](plots/{plot.name}.svg))", ""]
            else:
                png = base64.b64encode((embed_from / "plots" / f"{plot.name}.png").read_bytes()).decode("ascii")
                svg = f"{ARTIFACT_PATH}/plots/{plot.name}.svg"
                lines += [f"![{plot.name}](data:image/png;base64,{png})", "",
                          f"_{plot.caption}_ (SVG: `{svg}` among the artifacts)", ""]
    lines += [
        "## Data",
        "",
        "`runs.parquet` (one row per replicate run), `epochs.parquet` (their dev curves), `trials.parquet` (tune trials), "
        "`chosen.parquet` (the hyper-parameters each tuned arm chose), `summary.parquet` "
        "(mean, sd, bootstrap SE and CI per setting and metric, and the cell's `converged` verdict), `tests.parquet` "
        "(paired tests with Holm, `mde` and `n_needed`), `verdicts.parquet` (one row per claim of the spec: its "
        "direction and magnitude verdicts, its units and the numbers they follow from), "
        "`missing_partners.csv` (runs left out of tests).",
        "",
    ]
    return "\n".join(lines)


def _report_html(experiment: str, settings: AnalysisSettings, analysis: Analysis) -> str:
    from html import escape

    parts = [f"<h1>Analysis of experiment <code>{escape(experiment)}</code></h1>",
             f"<p>Settings: {escape(_settings_line(settings))}.</p>"]
    if analysis.warnings:
        parts.append("<h2>Warnings</h2><ul>" + "".join(f'<li class="warning">{escape(w)}</li>' for w in analysis.warnings)
                     + "</ul>")
    parts.append("<h2>Tables</h2>")
    parts += [to_html(t) for t in analysis.tables]
    if analysis.plots:
        parts.append("<h2>Figures</h2>")
        for plot in analysis.plots:
            parts.append(
                f'<figure><img src="plots/{escape(plot.name)}.png" alt="{escape(plot.name)}">'
                f'<figcaption class="note">{escape(plot.caption)}</figcaption></figure>'
            )
    return html_page(f"nerplat analysis: {experiment}", "\n".join(parts) + "\n")
