"""MLflow's runs table, registered models and optuna-dashboard of a finished tiny run, as a real
browser shows them (issue 15, items 1 and 2; issue 47, item 5).

The stores of `finished_tiny_run` are served by a real `mlflow server` and `optuna-dashboard` on
127.0.0.1 and opened at the URLs `nerplat ui` prints, in Debian's headless Chromium. Screenshots
are kept in the test's folder; `NERPLAT_SCREENSHOT_DIR=docs/images` also copies them there
(docs/tracking.md).
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest
from chromium import rendered_page
from nerplat_processes import runs

from nerplat.track import schema
from nerplat.track.ui_server import LocalMlflowServer, LocalOptunaDashboard, study_url
from nerplat.track.view import runs_table_url, shared_view_url

pytestmark = pytest.mark.slow

SCREENSHOT = "mlflow-runs.png"
COLUMNS_SCREENSHOT = "mlflow-runs-columns.png"
MODEL_SCREENSHOT = "mlflow-model.png"  # its list opens under a promotion, once per browser
BANNER = "You're viewing a shared view"
STUDY_SCREENSHOT = "optuna-dashboard.png"


def by_key(all_runs: list) -> dict:
    return {run.data.tags[schema.RUN_KEY]: run for run in all_runs}


def keep(screenshot: Path) -> None:
    if os.environ.get("NERPLAT_SCREENSHOT_DIR"):
        shutil.copy(screenshot, Path(os.environ["NERPLAT_SCREENSHOT_DIR"]) / screenshot.name)


def test_the_runs_table_shows_short_names_and_the_chosen_values(finished_tiny_run, tmp_path: Path):
    assert finished_tiny_run.code == 0, finished_tiny_run.output
    workdir = finished_tiny_run.workdir
    keyed = by_key(runs(workdir, "tiny_run"))
    arm = "conll2003/low_resource-40"
    mom_tune, mom_replicate = keyed[f"{arm}/mom/tune"], keyed[f"{arm}/mom/replicate"]
    chosen = mom_tune.data.params["objective.lambda"]
    assert mom_replicate.data.params["objective.lambda"] == chosen
    assert {"test_micro_f1_mean", "test_micro_f1_sd"} <= set(mom_replicate.data.metrics)
    assert not any(key.startswith(schema.CHILD_CLAIM_PREFIX) for key in mom_tune.data.params)
    best = [run for key, run in keyed.items() if key.startswith(f"{arm}/mom/tune/") and run.data.tags.get(schema.BEST_TRIAL)]
    assert [run.data.params["objective.lambda"] for run in best] == [chosen]
    summary = keyed["summary"]
    assert {"mom/test_micro_f1_mean", "ce/test_micro_f1_se"} <= set(summary.data.metrics)

    with LocalMlflowServer(f"sqlite:///{workdir / 'mlflow.db'}", workdir / "mlartifacts") as server:
        shots = {name: tmp_path / name for name in (SCREENSHOT, COLUMNS_SCREENSHOT, MODEL_SCREENSHOT)}
        table = rendered_page(runs_table_url(server.url, mom_tune.info.experiment_id), shots[SCREENSHOT])
        columns = rendered_page(shared_view_url(server.url, mom_tune.info.experiment_id), shots[COLUMNS_SCREENSHOT])
        replicate = keyed[f"{arm}/mom/replicate/seed0-partition0"]
        run_page = rendered_page(
            f"{server.url}/#/experiments/{replicate.info.experiment_id}/runs/{replicate.info.run_id}?workflowType=machine_learning",
            tmp_path / "mlflow-replicate.png",
        )
        models = rendered_page(f"{server.url}/#/models", tmp_path / "mlflow-models.png")
        model = rendered_page(f"{server.url}/#/models/mom.tiny_run", shots[MODEL_SCREENSHOT], width=1600, height=620)

    # The table nerplat opens first: no shared-view banner, the runs oldest first, the browser's columns (none yet).
    assert BANNER not in table
    top_level = sorted(
        (keyed[key] for key in ("summary", f"{arm}/mom/tune", f"{arm}/mom/replicate", f"{arm}/ce/replicate")),
        key=lambda run: run.info.start_time,
    )
    names = [run.info.run_name for run in top_level]
    assert [name for name in re.findall(r">([^<>]+)<", table) if name in names] == names
    assert ">objective.lambda<" not in table
    # Its shared view, nerplat's columns, under MLflow's banner. Top-level runs only: MLflow keeps
    # which runs are expanded out of shared views.
    assert BANNER in columns
    for name in ("summary", "mom · tune", "mom · replicate", "ce · replicate"):
        assert f">{name}<" in columns, name
    for column in ("objective.lambda", "dev_best_micro_f1", "test_micro_f1_mean", "test_micro_f1_sd", "nerplat.best_trial"):
        assert f">{column}<" in columns, column
    assert columns.count(f">{chosen}<") == 2  # the objective.lambda cells of mom's tune and replicate runs
    for text in ("mom · p0 · s0", "mom · replicate", "objective.lambda", chosen):  # a replicate's page: name, parent, value
        assert f">{text}<" in run_page, text
    # Registered models: short names that differ from their first characters, the full arm in the
    # list's tags and in the model's description.
    for name in ("ce.tiny_run", "mom.tiny_run"):
        assert f">{name}<" in models, name
    assert f"{arm}/mom" in models and f"{arm}/ce" in models
    assert f"nerplat tagger of arm {arm}/mom (dataset conll2003, sampler setting low_resource-40, method mom)" in model
    for screenshot in shots.values():
        keep(screenshot)


def test_optuna_dashboard_shows_the_tuned_arms_trials_with_their_mlflow_runs(finished_tiny_run, tmp_path: Path):
    assert finished_tiny_run.code == 0, finished_tiny_run.output
    workdir = finished_tiny_run.workdir
    trials = {
        run.info.run_name: run.data.params["objective.lambda"]
        for run in runs(workdir, "tiny_run")
        if run.data.tags[schema.KIND] == "trial" and run.data.tags.get(schema.STATUS) in ("completed", "early_stopped")
    }
    with LocalOptunaDashboard(f"sqlite:///{workdir / 'optuna.db'}") as dashboard:
        (name, study_id), = dashboard.studies()
        assert name == "tiny_run/conll2003/low_resource-40/mom"  # only mom is tuned
        screenshot = tmp_path / STUDY_SCREENSHOT
        history = rendered_page(study_url(dashboard.url, study_id), screenshot, width=1600)
        listed = rendered_page(f"{study_url(dashboard.url, study_id)}/trials", tmp_path / "optuna-trials.png", width=1600)

    for text in (f"{name} (id={study_id})", "History", "Hyperparameter Importance", "objective.lambda", "dev_best_micro_f1"):
        assert f">{text}<" in history, text
    assert f">{len(trials)} Trials<" in listed
    shown = re.search(r">mlflow_run_name (.+?)<", listed)  # the trial the list opens with, and its MLflow run
    assert shown and shown[1] in trials, listed[-3000:]
    assert f">objective.lambda {trials[shown[1]]}<" in listed
    keep(screenshot)
