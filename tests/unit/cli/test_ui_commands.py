from nerplat.cli import main
from nerplat.cli.ui_commands import _optuna_dashboard, _print_urls
from nerplat.local_servers import LocalOptunaDashboard, optuna_dashboard_hint
from nerplat.track.experiment_tracker import ExperimentTracker


def test_each_experiment_gets_its_runs_table_and_no_shared_view_link(capsys):
    """nerplat's columns come with the page (track/ui_front.py), so no shared-view link, whose banner
    MLflow shows, is printed."""
    _print_urls("http://127.0.0.1:5000/", [("quickstart", "3")])
    assert capsys.readouterr().out.splitlines() == [
        "http://127.0.0.1:5000/#/experiments/3/runs?workflowType=machine_learning&orderByKey=attributes.start_time&orderByAsc=true",
        "  (quickstart)",
    ]


def test_a_store_without_nerplat_experiments_gets_the_experiments_list(capsys):
    _print_urls("http://127.0.0.1:5000", [])
    lines = capsys.readouterr().out.splitlines()
    assert lines == ["http://127.0.0.1:5000/#/experiments", "  (no nerplat experiment in this store yet)"]


def test_ui_without_a_store_says_where_it_looked(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    assert main(["ui", "--workdir", str(tmp_path)]) == 2
    assert f"no MLflow store at {tmp_path.resolve() / 'mlflow.db'}" in capsys.readouterr().err


def test_ui_with_an_unknown_experiment_fails_before_starting_a_server(tracking_uri, capsys):
    ExperimentTracker.open(tracking_uri, "alpha")
    assert main(["ui", "--tracking-uri", tracking_uri, "--experiment", "nope"]) == 2
    assert "no experiment 'nope'" in capsys.readouterr().err


def test_without_studies_yet_ui_prints_the_command_that_serves_them(tmp_path, capsys):
    storage = f"sqlite:///{tmp_path / 'optuna.db'}"
    assert _optuna_dashboard(storage) is None
    *prose, command = capsys.readouterr().out.splitlines()
    assert " ".join(" ".join(prose).split()) == (
        f"no Optuna study at {storage} yet (`nerplat run` creates one per tuned arm); serve the studies with:"
    )
    assert command == f"  {optuna_dashboard_hint(storage)}"  # a line of its own: copied as is
    (tmp_path / "optuna.db").touch()
    assert isinstance(_optuna_dashboard(storage), LocalOptunaDashboard)
