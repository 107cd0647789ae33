"""The analysis stage end to end on a real SQLite MLflow store."""

from __future__ import annotations

import json

import polars as pl
import pytest
from analysis_store import PLAN

from nerplat.analysis.report import analyze_experiment, experiment_settings
from nerplat.analysis.report_folder import MANIFEST
from nerplat.analysis.settings import AnalysisSettings
from nerplat.errors import UserInputError


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

    plan = {
        "analysis": {"baseline": "ce", "decimals": 3},
        "resolved_spec": {"methods": {"wce1": {"loss": "wce", "display": "WCE (w=1)"}, "ce": {"loss": "ce"}}},
    }
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
        analyze_experiment(store.experiment, store.client.tracking_uri, out, ["md"], registrations=tmp_path / "registered")
    assert (out / "report.md").read_text() == "previous"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_tune_only_experiments_still_get_their_hyperparameter_plot():
    from nerplat.analysis.report import analyse
    from nerplat.analysis.run_frames import replicate_frame

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




def test_a_report_whose_inputs_are_unchanged_is_kept_when_asked(store, tmp_path):
    """Issue 47: `nerplat run --resume` of a finished experiment analysed its unchanged runs again."""
    import functools
    import os

    from nerplat.analysis import report

    store.replicate("ce", 0, {"test_micro_f1": 0.5})
    store.replicate("ce", 1, {"test_micro_f1": 0.6})
    store.summary({"analysis": {}, "replicate_split": "test"})
    out, uri = tmp_path / "out", store.client.tracking_uri
    # no registrations: dating the repository's would cost each analysis ~100 git calls (their part of
    # the inputs: tests/unit/analysis/test_report_inputs.py)
    analyze_experiment = functools.partial(report.analyze_experiment, registrations=tmp_path / "registered")
    built = analyze_experiment(store.experiment, uri, out, ["md"], keep_unchanged=True)
    assert not built.kept
    written = {path: os.stat(path).st_mtime_ns for path in built.files}
    manifest = (out / MANIFEST).read_text()

    kept = analyze_experiment(store.experiment, uri, out, ["md"], keep_unchanged=True)
    assert kept.kept and set(kept.files) == set(built.files) and kept.summary_run_id == built.summary_run_id
    assert (kept.warnings, kept.unconverged) == (built.warnings, built.unconverged)  # said again, as the report says them
    assert {path: os.stat(path).st_mtime_ns for path in kept.files} == written and (out / MANIFEST).read_text() == manifest
    assert not analyze_experiment(store.experiment, uri, out, ["md"]).kept  # `nerplat analyze` always builds anew
    assert not analyze_experiment(store.experiment, uri, out, ["md", "csv"], keep_unchanged=True).kept  # other formats

    store.replicate("ce", 2, {"test_micro_f1": 0.7})  # a run more
    assert not analyze_experiment(store.experiment, uri, out, ["md"], keep_unchanged=True).kept
    assert analyze_experiment(store.experiment, uri, out, ["md"], keep_unchanged=True).kept
    (out / "report.md").unlink()  # a file of it is gone
    again = analyze_experiment(store.experiment, uri, out, ["md"], keep_unchanged=True)
    assert not again.kept and (out / "report.md").is_file()
