"""The analysis stage end to end on a real SQLite MLflow store."""

from __future__ import annotations

import base64
import json
import os
import stat
from pathlib import Path

import polars as pl
import pytest

from nerplat.analysis.report import analyze_experiment, experiment_settings
from nerplat.analysis.report_folder import MANIFEST
from nerplat.analysis.settings import AnalysisSettings
from nerplat.errors import UserInputError
from nerplat.track import schema

PLAN = {
    "analysis": {"baseline": "ce", "test": "paired_t", "alpha": 0.05, "comparisons": [["mom", "focal"]], "bootstrap_resamples": 200},
    "replicate_split": "test",
}
EFFECT = {"ce": 0.0, "focal": 0.02, "mom": 0.05}


def _metrics(method: str, size: int, seed: int) -> dict[str, float]:
    base = 0.3 + size / 200 + EFFECT[method] + 0.01 * ((seed * 7 + size) % 3)
    return {
        "test_micro_precision": base + 0.02, "test_micro_recall": base - 0.02, "test_micro_f1": base,
        "test_type_PER_f1": base - 0.05, "test_type_PER_precision": base, "test_type_PER_recall": base - 0.1,
        "test_type_PER_support": 40.0, "test_macro_f1": base - 0.05, "test_macro_precision": base, "test_macro_recall": base - 0.1,
        "train_sentences": float(size), "train_size_factor": 1.0,
    }


def _populate(store, skip: tuple[str, int, int] | None = None, plan: dict | None = PLAN) -> None:
    for method in EFFECT:
        for size in (20, 50):
            for seed in range(3):
                if (method, size, seed) != skip:
                    store.replicate(method, seed, _metrics(method, size, seed), size=size)
    tags = {schema.METHOD: "mom", schema.DATASET: "toy", schema.STATUS: "completed"}
    for trial, lam in enumerate((0.0, 0.1, 0.5)):
        store.run("trial", tags | {schema.TRIAL: str(trial)}, {"dev_best_micro_f1": 0.5 + lam / 10}, {"objective.lambda": str(lam)})
    if plan is not None:
        store.summary(plan)


@pytest.mark.slow
def test_report_folder_and_summary_run_artifacts(store, tmp_path):
    _populate(store, skip=("focal", 50, 1))
    out = tmp_path / "reports" / store.experiment
    report = analyze_experiment(store.experiment, store.client.tracking_uri, out, ["md", "latex", "html", "csv"])

    names = {p.relative_to(out).as_posix() for p in report.files}
    for expected in (
        "report.md", "report.html", "runs.parquet", "trials.parquet", "summary.parquet", "tests.parquet",
        "missing_partners.csv", "settings.json", "tables/size-toy-low_resource.tex", "tables/comparison-low_resource-size-20.md",
        "tables/tests-pairs.csv", "tables/per-type-toy-low_resource-size-50.html", "plots/learning-curve-toy-low_resource.png",
        "plots/learning-curve-toy-low_resource.svg", "plots/displacement-toy-low_resource.png",
        "plots/hyperparameter-toy-objective.lambda.png",
    ):
        assert expected in names, expected
    assert pl.read_parquet(out / "runs.parquet").height == 17
    assert json.loads((out / "settings.json").read_text())["comparisons"] == [["mom", "focal"]]
    # the missing focal run is reported, twice (against ce and against mom), never silently dropped
    unpaired = [w for w in report.warnings if w.startswith("unpaired")]
    assert len(unpaired) == 2 and all("seed=1" in w and "no focal run" in w for w in unpaired)
    assert any("no corpus statistics for toy" in w for w in report.warnings)
    assert "## Warnings" in (out / "report.md").read_text()
    tests = pl.read_parquet(out / "tests.parquet")
    focal_50 = tests.filter((pl.col("method") == "focal") & (pl.col("sampler") == "low_resource(size=50)"))
    assert focal_50["n_pairs"].unique().to_list() == [2]
    # everything is also an artifact of the (runner-created) summary run
    artifacts = {a.path for a in store.client.list_artifacts(report.summary_run_id, "analysis")}
    assert {"analysis/report.md", "analysis/tables", "analysis/plots"} <= artifacts
    summary = store.client.get_run(report.summary_run_id)
    assert summary.data.tags[schema.KIND] == "summary"
    # ... with the report page first among its artifacts, its plots linked in the report folder
    top = [a.path for a in store.client.list_artifacts(report.summary_run_id)]
    assert top[0] == "REPORT.md"
    page = Path(store.client.download_artifacts(report.summary_run_id, "REPORT.md", str(tmp_path))).read_text()
    # MLflow's viewer shows only images with a URL scheme, and prints HTML tags as text: figures are data URLs
    png = (out / "plots" / "learning-curve-toy-low_resource.png").read_bytes()
    assert f"](data:image/png;base64,{base64.b64encode(png).decode()})" in page
    assert "<u>" not in page and "<sub>" not in page and "](analysis/" not in page
    assert "](plots/learning-curve-toy-low_resource.png)" in (out / "report.md").read_text()  # the folder's page: beside it
    # ... and the headline numbers as metrics, one per arm (its short label) and measure
    expected = pl.read_parquet(out / "summary.parquet").filter(
        (pl.col("method") == "mom") & (pl.col("size") == 20) & (pl.col("metric") == "test_micro_f1")
    )
    assert summary.data.metrics["mom/low_resource-20/test_micro_f1_mean"] == pytest.approx(expected["mean"][0])
    assert summary.data.metrics["mom/low_resource-20/test_micro_f1_se"] == pytest.approx(expected["se"][0])
    assert len([key for key in summary.data.metrics if key.endswith("_mean")]) == 3 * 2 * 3  # methods x sizes x (P, R, F1)


@pytest.mark.slow
def test_without_a_summary_run_one_is_created_and_a_rerun_replaces_only_its_own_files(store, tmp_path):
    _populate(store, plan=None)
    out = tmp_path / "reports" / "report"
    settings = experiment_settings(store.experiment, store.client.tracking_uri, {"baseline": "ce"})
    previous = os.umask(0o022)
    try:
        report = analyze_experiment(store.experiment, store.client.tracking_uri, out, ["md", "latex"], settings)
    finally:
        os.umask(previous)
    assert stat.S_IMODE(out.stat().st_mode) == 0o755  # the umask's mode, not mkdtemp's 0700
    run = store.client.get_run(report.summary_run_id)
    assert run.info.run_name == "summary" and run.data.tags[schema.KIND] == "summary"
    assert list((out / "tables").glob("*.tex"))
    (out / "notes.md").write_text("the user's notes")
    again = analyze_experiment(store.experiment, store.client.tracking_uri, out, ["md"])
    assert again.summary_run_id == report.summary_run_id  # found, not created twice
    assert not list((out / "tables").glob("*.tex"))  # the first report's files that the second lacks are gone
    assert (out / "notes.md").read_text() == "the user's notes"  # what nerplat did not write stays
    assert out / "notes.md" not in again.files
    artifacts = {a.path for a in store.client.list_artifacts(again.summary_run_id, "analysis")}
    assert "analysis/notes.md" not in artifacts and "analysis/report.md" in artifacts
    assert [p.name for p in out.parent.iterdir()] == ["report"]  # no temporary folders left


@pytest.mark.parametrize("foreign", ["paper.tex", "mlflow.db"])
def test_a_folder_nerplat_did_not_write_is_refused_untouched(store, tmp_path, foreign):
    store.replicate("ce", 0, {"test_micro_f1": 0.5})
    out = tmp_path / "papers"
    out.mkdir()
    (out / foreign).write_text("the user's")
    with pytest.raises(UserInputError, match="not empty"):
        analyze_experiment(store.experiment, store.client.tracking_uri, out, ["md"])
    assert [p.name for p in out.iterdir()] == [foreign] and (out / foreign).read_text() == "the user's"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_plan_settings_with_flag_overrides(store):
    store.summary(PLAN)
    settings = experiment_settings(store.experiment, store.client.tracking_uri, {"alpha": 0.01, "test": "wilcoxon"})
    assert (settings.baseline, settings.alpha, settings.test, settings.bootstrap_resamples) == ("ce", 0.01, "wilcoxon", 200)
    assert settings.comparisons == (("mom", "focal"),)


def test_the_methods_display_names_and_the_decimals_come_from_the_plan():
    from nerplat.analysis.report import settings_from_plan

    plan = {"analysis": {"baseline": "ce", "decimals": 3}, "resolved_spec": {"methods": {"wce1": {"loss": "wce", "display": "WCE (w=1)"}, "ce": {"loss": "ce"}}}}
    settings = settings_from_plan(plan, "plan.json")
    assert settings.display == {"wce1": "WCE (w=1)"} and settings.decimals == 3
    assert settings_from_plan({"analysis": {}}, "plan.json").display == {}


def test_a_bad_plan_analysis_names_the_field(store):
    store.summary({"analysis": {"alpha": 2, "tests": "t"}})
    with pytest.raises(UserInputError) as error:
        experiment_settings(store.experiment, store.client.tracking_uri)
    paths = {p.path for p in error.value.problems}
    assert paths == {"analysis.alpha", "analysis.tests"}
    assert all("plan.json" in p.source for p in error.value.problems)


def test_unknown_baseline_is_refused_with_a_suggestion(store, tmp_path):
    store.replicate("ce", 0, {"test_micro_f1": 0.5})
    store.summary({"analysis": {"baseline": "cee", "comparisons": [["ce", "mom"]]}})
    with pytest.raises(UserInputError) as error:
        analyze_experiment(store.experiment, store.client.tracking_uri, tmp_path / "out", ["md"])
    messages = [str(p) for p in error.value.problems]
    assert "did you mean 'ce'?" in messages[0] and "analysis.baseline" in messages[0]
    assert "'mom'" in messages[1]
    assert not (tmp_path / "out").exists()


def test_an_experiment_without_runs_is_a_user_error(store, tmp_path):
    with pytest.raises(UserInputError, match="no replicate or trial runs"):
        analyze_experiment(store.experiment, store.client.tracking_uri, tmp_path / "out", ["md"])


def test_unknown_format_is_refused(store, tmp_path):
    with pytest.raises(UserInputError, match="unknown table format.*docx"):
        analyze_experiment(store.experiment, store.client.tracking_uri, tmp_path / "out", ["md", "docx"])


def test_a_failure_while_writing_keeps_the_previous_report(store, tmp_path, monkeypatch):
    from nerplat.analysis import report as report_module

    store.replicate("ce", 0, {"test_micro_f1": 0.5})
    out = tmp_path / "out"
    out.mkdir()
    (out / "report.md").write_text("previous")
    (out / MANIFEST).write_text(json.dumps({"files": ["report.md"]}))  # an earlier report's folder

    def broken(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(report_module, "write_report", broken)
    with pytest.raises(RuntimeError):
        analyze_experiment(store.experiment, store.client.tracking_uri, out, ["md"])
    assert (out / "report.md").read_text() == "previous"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_tune_only_experiments_still_get_their_hyperparameter_plot():
    from nerplat.analysis.report import analyse
    from nerplat.analysis.runs import replicate_frame

    trials = pl.DataFrame({
        "dataset": ["toy"] * 4, "method": ["mom"] * 4, "status": ["completed"] * 4,
        "param.objective.lambda": [0.0, 0.1, 0.5, 1.0], "dev_best_micro_f1": [0.5, 0.6, 0.7, 0.6],
    })
    analysis = analyse(replicate_frame([]), trials, AnalysisSettings(baseline="ce"))
    assert analysis.tables == [] and analysis.tests.is_empty()
    assert [p.name for p in analysis.plots] == ["hyperparameter-toy-objective.lambda"]


def test_failed_and_interrupted_replicates_are_left_out_with_a_warning():
    from nerplat.analysis.report import analyse
    from nerplat.analysis.synthetic import synthetic_replicates

    frame = synthetic_replicates(methods=("ce", "mom"), sizes=(20,), seeds=3, types=())
    frame = frame.with_columns(
        pl.when((pl.col("method") == "mom") & (pl.col("seed") == 0)).then(pl.lit("failed"))
        .when((pl.col("method") == "mom") & (pl.col("seed") == 1)).then(pl.lit("interrupted"))
        .otherwise(pl.col("status")).alias("status")
    )
    analysis = analyse(frame, pl.DataFrame(), AnalysisSettings(baseline="ce", bootstrap_resamples=100))
    assert analysis.warnings[0].startswith("2 replicate runs failed or were interrupted")
    mom = analysis.summary.filter((pl.col("method") == "mom") & (pl.col("metric") == "test_micro_f1"))
    assert mom["n"].to_list() == [1]
    assert sum(w.startswith("unpaired: mom vs ce") for w in analysis.warnings) == 2


@pytest.mark.slow
def test_report_gives_convergence_power_and_the_best_other_partner(store, tmp_path):
    from mlflow.entities import Metric

    dev_score = {"ce": 0.40, "focal": 0.55, "mom": 0.50}
    for method in EFFECT:
        for seed in range(3):
            rising = method == "ce"  # ce still climbs and picks its last epoch; the others plateau early
            metrics = _metrics(method, 20, seed) | {"dev_best_micro_f1": dev_score[method] + 0.01 * seed, "selected_epoch": 4.0 if rising else 2.0}
            metrics["test_micro_f1"] += 0.004 * seed * len(method)  # paired differences with spread: power is defined
            run_id = store.replicate(method, seed, metrics)
            curve = (0.2, 0.3, 0.4, 0.5) if rising else (0.4, 0.5, 0.5, 0.49)
            store.client.log_batch(run_id, metrics=[Metric("dev_micro_f1", v, 1, e) for e, v in enumerate(curve, start=1)])
    store.summary({**PLAN, "analysis": {**PLAN["analysis"], "against_best": ["mom"]}})
    tune = {schema.PHASE: "tune", schema.ARM: "toy/low_resource-20/mom", schema.METHOD: "mom", schema.DATASET: "toy"}
    store.run("arm", tune | {schema.SAMPLED: json.dumps({"objective.lambda": 0.35})}, {"dev_best_micro_f1": 0.52})
    out = tmp_path / "report"
    report = analyze_experiment(store.experiment, store.client.tracking_uri, out, ["md", "html"])

    summary = pl.read_parquet(out / "summary.parquet")
    assert dict(summary.select("method", "converged").unique().iter_rows()) == {"ce": False, "focal": True, "mom": True}
    assert len(report.unconverged) == 1 and report.unconverged[0].startswith("not converged: ce on toy")
    tests = pl.read_parquet(out / "tests.parquet")
    assert {"mde", "n_needed", "sd_delta", "converged", "partner_converged"} <= set(tests.columns)
    assert tests["mde"].null_count() < tests.height
    best = tests.filter(pl.col("family") == "best-other")
    assert set(zip(best["method"], best["partner"])) == {("mom", "focal")}
    assert (out / "tables" / "dev-curve-toy-low_resource-size-20.md").exists()
    assert "‡" in (out / "tables" / "comparison-low_resource-size-20.md").read_text()
    assert "Selection caveat" in (out / "tables" / "tests-best-other.md").read_text()

    # the report page shows the convergence and power columns, and the chosen hyper-parameters
    page = (out / "report.html").read_text()
    for header in ("<th>Converged</th>", "<th>Last epoch selected</th>", "<th>MDE</th>", "<th>Pairs needed</th>", "<th>objective.lambda</th>"):
        assert header in page, header
    assert '<figure class="nerplat-table" id="chosen-hyperparameters">' in page and "<td>0.35</td>" in page
    assert page.count('<div class="table-scroll">') == page.count("<table>") > 1  # every table scrolls in its own box
