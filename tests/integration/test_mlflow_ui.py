"""MLflow's UI as `nerplat ui` opens it, and optuna-dashboard, on a finished tiny run, in a real
browser (issue 15, items 1 and 2; issue 47, item 5; issue 63, item 5).

The stores of `finished_tiny_run` are served by one real `mlflow server`, through nerplat's front
(`track/ui_front.py`), and one `optuna-dashboard` on 127.0.0.1 for the whole module, and opened in
Debian's headless Chromium in a 1400-pixel window, each page in a fresh profile (a first visit).
Each test reads the page's DOM for what MLflow 3.17 shows unless nerplat's settings say otherwise:
the shared-view banner, the assistant panel, the GenAI sidebar on a run's page, the promotion of the
new model registry, numbers with every digit of a double, a test metric beyond the window's edge,
nerplat's bookkeeping experiments. Screenshots are kept in the tests' folders;
`NERPLAT_SCREENSHOT_DIR=docs/images` also copies them there (docs/tracking.md).
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from chromium import rendered_page
from nerplat_processes import runs

from nerplat.track import schema
from nerplat.local_servers import LocalMlflowServer, LocalOptunaDashboard, LocalUiFront, study_url
from nerplat.track.experiment_reader import experiments_to_show, open_client
from nerplat.track.view import runs_table_url

pytestmark = pytest.mark.slow

WIDTH = 1400  # the window of issue 63
# MLflow's sidebar and the page's margin left of the runs table, and the margin right of it, at that
# width (measured on the screenshot): the table's columns have the rest.
LEFT_OF_TABLE, RIGHT_OF_TABLE = 222, 32
BANNER = "You're viewing a shared view"
ASSISTANT_PANEL = "Ask a question..."  # the panel's composer
REGISTRY_PROMOTION = "the new Model Registry UI"
GENAI_SIDEBAR = (">Judges<", ">Prompts<", ">AI Gateway<", ">Evaluation runs<")
ARM = "conll2003/low_resource-40"


@pytest.fixture(scope="module")
def mlflow_ui(finished_tiny_run) -> Iterator[str]:
    """The URL of MLflow's UI through nerplat's front, on the tiny run's store."""
    assert finished_tiny_run.code == 0, finished_tiny_run.output
    workdir = finished_tiny_run.workdir
    with LocalMlflowServer(f"sqlite:///{workdir / 'mlflow.db'}", workdir / "mlartifacts") as mlflow:
        with LocalUiFront(mlflow.url) as front:
            yield front.url


@pytest.fixture(scope="module")
def keyed(finished_tiny_run) -> dict:
    return {run.data.tags[schema.RUN_KEY]: run for run in runs(finished_tiny_run.workdir, "tiny_run")}


def keep(screenshot: Path) -> None:
    if os.environ.get("NERPLAT_SCREENSHOT_DIR"):
        shutil.copy(screenshot, Path(os.environ["NERPLAT_SCREENSHOT_DIR"]) / screenshot.name)


def assert_no_clutter(page: str) -> None:
    """None of what MLflow shows on a first visit unless told otherwise, on any page."""
    assert BANNER not in page
    assert ASSISTANT_PANEL not in page
    assert REGISTRY_PROMOTION not in page
    for entry in GENAI_SIDEBAR:
        assert entry not in page, entry


def cell_texts(page: str) -> list[str]:
    """The text of each table cell (ag-grid's and MLflow's other tables)."""
    cells = re.findall(r'<(?:div|td)[^>]*role="(?:grid)?cell"[^>]*>(.*?)</(?:div|td)>', page)
    return [re.sub(r"<[^>]+>", "", cell).strip() for cell in cells]


def long_numbers(page: str) -> list[str]:
    """Numbers in table cells with more than four significant digits."""
    numbers = [text for text in cell_texts(page) if re.fullmatch(r"-?\d+\.\d+(e[-+]?\d+)?", text)]
    return [text for text in numbers if len(re.sub(r"^[-0.]+|\.|e.*$", "", text)) > 4]


def column_right_edge(page: str, column: str) -> int:
    """Where the runs table's header `column` ends, in pixels from the window's left edge."""
    pinned = re.search(r'class="ag-pinned-left-header[^"]*"[^>]*style="width: (\d+)px', page)
    header = re.search(rf'role="columnheader"[^>]*col-id="{re.escape(column)}"[^>]*style="left: (\d+)px; width: (\d+)px', page)
    assert pinned and header, f"no column {column}"
    return LEFT_OF_TABLE + int(pinned[1]) + int(header[1]) + int(header[2])


def test_the_runs_table_opens_with_nerplats_columns_rounded_in_the_window_and_no_clutter(mlflow_ui, keyed, tmp_path: Path):
    mom_tune, mom_replicate = keyed[f"{ARM}/mom/tune"], keyed[f"{ARM}/mom/replicate"]
    chosen = mom_tune.data.params["objective.lambda"]
    assert mom_replicate.data.params["objective.lambda"] == chosen
    assert {"test_micro_f1_mean", "test_micro_f1_sd"} <= set(mom_replicate.data.metrics)
    assert len(chosen) > 6  # a double in full: the table shows it rounded
    screenshot = tmp_path / "mlflow-runs.png"
    table = rendered_page(runs_table_url(mlflow_ui, mom_tune.info.experiment_id), screenshot, width=WIDTH)

    assert_no_clutter(table)
    top_level = sorted(
        (keyed[key] for key in ("summary", f"{ARM}/mom/tune", f"{ARM}/mom/replicate", f"{ARM}/ce/replicate")),
        key=lambda run: run.info.start_time,
    )
    names = [run.info.run_name for run in top_level]  # oldest first
    assert [name for name in re.findall(r">([^<>]+)<", table) if name in names] == names
    for column in ("objective.lambda", "dev_best_micro_f1", "test_micro_f1_mean", "test_micro_f1_sd", "nerplat.best_trial"):
        assert f">{column}<" in table, column
    for column in ("metrics.`test_micro_f1`", "metrics.`test_micro_f1_mean`", "metrics.`test_micro_f1_sd`"):
        assert column_right_edge(table, column) <= WIDTH - RIGHT_OF_TABLE, f"{column} is cut at the window's right edge"
    assert long_numbers(table) == []
    rounded = f"{float(chosen):.4g}"
    assert table.count(f'title="{chosen}">{rounded}<') == 2  # mom's tune and replicate runs; the full value on hover
    mean = mom_replicate.data.metrics["test_micro_f1_mean"]
    assert f'title="{mean!r}">{mean:.4g}<' in table
    keep(screenshot)


def test_a_runs_page_keeps_the_classic_sidebar_and_rounds_its_values(mlflow_ui, keyed, tmp_path: Path):
    replicate = keyed[f"{ARM}/mom/replicate/seed0-partition0"]
    chosen = replicate.data.params["objective.lambda"]
    # as a click in the runs table opens it: no workflowType in the URL
    url = f"{mlflow_ui}/#/experiments/{replicate.info.experiment_id}/runs/{replicate.info.run_id}"
    run_page = rendered_page(url, tmp_path / "mlflow-replicate.png", width=WIDTH)

    assert_no_clutter(run_page)
    for text in ("mom · p0 · s0", "mom · replicate", "objective.lambda", f"{float(chosen):.4g}", "Model registry"):
        assert f">{text}<" in run_page, text  # its name, its parent, the chosen value; the classic sidebar
    assert long_numbers(run_page) == []


def test_the_model_registry_opens_without_a_promotion(mlflow_ui, tmp_path: Path):
    shot = tmp_path / "mlflow-model.png"
    models = rendered_page(f"{mlflow_ui}/#/models", tmp_path / "mlflow-models.png", width=WIDTH)
    model = rendered_page(f"{mlflow_ui}/#/models/mom.tiny_run", shot, width=WIDTH, height=620)

    for page in (models, model):
        assert_no_clutter(page)
        assert 'role="dialog"' not in page
    # short names that differ from their first characters, the full arm in the list's tags and in the model's description
    for name in ("ce.tiny_run", "mom.tiny_run"):
        assert f">{name}<" in models, name
    assert f"{ARM}/mom" in models and f"{ARM}/ce" in models
    assert f"nerplat tagger of arm {ARM}/mom (dataset conll2003, sampler setting low_resource-40, method mom)" in model
    keep(shot)


def test_the_experiment_list_leaves_out_the_bookkeeping_experiments(mlflow_ui, finished_tiny_run, tmp_path: Path):
    uri = f"sqlite:///{finished_tiny_run.workdir / 'mlflow.db'}"
    assert [name for name, _ in experiments_to_show(open_client(uri), None)] == ["tiny_run"]
    listed = rendered_page(f"{mlflow_ui}/#/experiments", tmp_path / "mlflow-experiments.png", width=WIDTH)

    assert_no_clutter(listed)
    assert ">tiny_run<" in listed
    assert "nerplat bookkeeping" not in listed


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
        screenshot = tmp_path / "optuna-dashboard.png"
        history = rendered_page(study_url(dashboard.url, study_id), screenshot, width=1600)
        listed = rendered_page(f"{study_url(dashboard.url, study_id)}/trials", tmp_path / "optuna-trials.png", width=1600)

    for text in (f"{name} (id={study_id})", "History", "Hyperparameter Importance", "objective.lambda", "dev_best_micro_f1"):
        assert f">{text}<" in history, text
    assert f">{len(trials)} Trials<" in listed
    shown = re.search(r">mlflow_run_name (.+?)<", listed)  # the trial the list opens with, and its MLflow run
    assert shown and shown[1] in trials, listed[-3000:]
    assert f">objective.lambda {trials[shown[1]]}<" in listed
    keep(screenshot)
