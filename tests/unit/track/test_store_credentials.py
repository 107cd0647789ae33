"""Credentials in a tracking URI move to the client's variables; the URI that is logged and given
to Ray has none."""

import pytest

from nerplat.run.ray_session import FORWARDED_ENV
from nerplat.track.store import adopt_uri_credentials, resolve_tracking_uri


@pytest.mark.parametrize(
    ("uri", "clean", "moved"),
    [
        ("https://bob:p%40ss@mlflow.example:5000", "https://mlflow.example:5000",
         {"MLFLOW_TRACKING_USERNAME": "bob", "MLFLOW_TRACKING_PASSWORD": "p@ss"}),
        ("postgresql://bob:pw@db:5432/mlflow", "postgresql://db:5432/mlflow", {"PGUSER": "bob", "PGPASSWORD": "pw"}),
        ("http://127.0.0.1:5000/?token=abc", "http://127.0.0.1:5000/?token=", {}),
        ("http://127.0.0.1:5000", "http://127.0.0.1:5000", {}),
        ("sqlite:////tmp/mlflow.db", "sqlite:////tmp/mlflow.db", {}),
    ],
)
def test_credentials_leave_the_uri_for_the_environment(uri, clean, moved):
    environ = {}
    assert adopt_uri_credentials(uri, environ) == clean
    assert environ == moved


def test_the_resolved_tracking_uri_has_no_credentials(monkeypatch, tmp_path):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://alice:s3cret@127.0.0.1:5000")
    monkeypatch.delenv("MLFLOW_TRACKING_USERNAME", raising=False)
    monkeypatch.delenv("MLFLOW_TRACKING_PASSWORD", raising=False)
    assert resolve_tracking_uri(None, tmp_path) == "http://127.0.0.1:5000"
    import os

    assert (os.environ["MLFLOW_TRACKING_USERNAME"], os.environ["MLFLOW_TRACKING_PASSWORD"]) == ("alice", "s3cret")


def test_the_tracking_uri_is_not_forwarded_into_rays_runtime_environment():
    assert "MLFLOW_TRACKING_URI" not in FORWARDED_ENV
