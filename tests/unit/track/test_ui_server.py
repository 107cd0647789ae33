import pytest

from nerplat.cli import main
from nerplat.errors import UserInputError
from nerplat.track.runs import ExperimentTracker
from nerplat.track.ui_server import experiments_to_show, free_port, port_in_use


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
