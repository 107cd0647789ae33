"""The analysis stage end to end on a real SQLite MLflow store: the report folder, its summary run,
reruns, and the convergence, power and best-other columns a report gives (plots drawn: slow)."""

from __future__ import annotations

import base64
import json
import os
import stat
from pathlib import Path

import polars as pl
import pytest
from analysis_store import EFFECT, PLAN, populate_report_store, report_metrics

from nerplat.analysis.report import analyze_experiment, experiment_settings
from nerplat.track import schema


@pytest.mark.slow
def test_report_folder_and_summary_run_artifacts(store, tmp_path):
    populate_report_store(store, skip=("focal", 50, 1))
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
    populate_report_store(store, plan=None)
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


@pytest.mark.slow
def test_report_gives_convergence_power_and_the_best_other_partner(store, tmp_path):
    from mlflow.entities import Metric

    dev_score = {"ce": 0.40, "focal": 0.55, "mom": 0.50}
    for method in EFFECT:
        for seed in range(3):
            rising = method == "ce"  # ce still climbs and runs to its cap; the others stop at their plateau
            metrics = report_metrics(method, 20, seed) | {
                "dev_best_micro_f1": dev_score[method] + 0.01 * seed, "selected_epoch": 4.0 if rising else 2.0,
                "stopped_epoch": 4.0,
            }  # fmt: skip
            metrics["test_micro_f1"] += 0.004 * seed * len(method)  # paired differences with spread: power is defined
            run_id = store.replicate(method, seed, metrics, stopped_by="cap" if rising else "patience")
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
    for header in (
        "<th>Converged</th>", "<th>Last epoch selected</th>", "<th>MDE</th>", "<th>Pairs needed</th>", "<th>objective.lambda</th>"
    ):
        assert header in page, header
    assert '<figure class="nerplat-table" id="chosen-hyperparameters">' in page and "<td>0.35</td>" in page
    assert page.count('<div class="table-scroll">') == page.count("<table>") > 1  # every table scrolls in its own box
