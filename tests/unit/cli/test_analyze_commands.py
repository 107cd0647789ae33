"""`nerplat rescore`'s errors (rescoring itself: tests/unit/analysis/test_rescoring.py)."""

from __future__ import annotations

from nerplat.cli import main


def test_rescore_of_an_unknown_experiment_exits_2_naming_the_experiments_there(tracking_uri, capsys):
    from mlflow import MlflowClient

    MlflowClient(tracking_uri).create_experiment("there")
    assert main(["rescore", "nope", "--tracking-uri", tracking_uri]) == 2
    error = capsys.readouterr().err
    assert "no MLflow experiment named 'nope'" in error and "there" in error


def test_rescore_without_a_store_exits_2_and_creates_none(tmp_path, capsys):
    assert main(["rescore", "exp", "--tracking-uri", f"sqlite:///{tmp_path / 'none.db'}"]) == 2
    assert "no MLflow store at" in capsys.readouterr().err and not (tmp_path / "none.db").exists()
