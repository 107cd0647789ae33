import sys
from pathlib import Path

import pytest

from nerplat.cli import main
from nerplat.errors import UserInputError
from nerplat.track.runs import ExperimentTracker
from nerplat.track.ui_server import (
    LocalOptunaDashboard,
    experiments_to_show,
    free_port,
    optuna_dashboard_hint,
    port_in_use,
)


def test_experiments_to_show(tracking_uri):
    first = ExperimentTracker.open(tracking_uri, "alpha")
    second = ExperimentTracker.open(tracking_uri, "beta")
    assert experiments_to_show(tracking_uri, "beta") == [("beta", second.experiment_id)]
    assert experiments_to_show(tracking_uri, None) == [("alpha", first.experiment_id), ("beta", second.experiment_id)]
    with pytest.raises(UserInputError, match="did you mean 'alpha'"):
        experiments_to_show(tracking_uri, "alpah")


def test_free_port_is_free():
    assert not port_in_use(free_port())


def test_ui_without_a_store_says_where_it_looked(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    assert main(["ui", "--workdir", str(tmp_path)]) == 2
    assert f"no MLflow store at {tmp_path.resolve() / 'mlflow.db'}" in capsys.readouterr().err


def test_ui_with_an_unknown_experiment_fails_before_starting_a_server(tracking_uri, capsys):
    ExperimentTracker.open(tracking_uri, "alpha")
    assert main(["ui", "--tracking-uri", tracking_uri, "--experiment", "nope"]) == 2
    assert "no experiment 'nope'" in capsys.readouterr().err


def test_the_optuna_dashboard_hint_is_a_command_to_copy():
    assert optuna_dashboard_hint("sqlite:////w/optuna.db") == "optuna-dashboard --host 127.0.0.1 --port 8080 --server wsgiref sqlite:////w/optuna.db"


def test_optuna_dashboard_runs_the_script_of_this_environment_on_loopback(tmp_path):
    dashboard = LocalOptunaDashboard(f"sqlite:///{tmp_path / 'optuna.db'}")
    command = dashboard.command()
    assert command[0] == str(Path(sys.executable).parent / "optuna-dashboard")  # a dependency of nerplat
    assert command[1:] == ["--host", "127.0.0.1", "--port", str(dashboard.port), "--server", "wsgiref", f"sqlite:///{tmp_path / 'optuna.db'}"]


def test_without_studies_yet_ui_prints_the_command_that_serves_them(tmp_path, capsys):
    from nerplat.cli.ui_commands import _optuna_dashboard

    storage = f"sqlite:///{tmp_path / 'optuna.db'}"
    assert _optuna_dashboard(storage) is None
    assert capsys.readouterr().out == (
        f"no Optuna study at {storage} yet (`nerplat run` creates one per tuned arm); "
        f"serve the studies with: {optuna_dashboard_hint(storage)}\n"
    )
    (tmp_path / "optuna.db").touch()
    assert isinstance(_optuna_dashboard(storage), LocalOptunaDashboard)
