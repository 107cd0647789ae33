"""Real SQLite MLflow stores for analysis tests (`tracking_uri` from tests/conftest.py), written like the runner writes."""

from analysis_store import store  # noqa: F401  (pytest fixture; tests/support/analysis_store.py)
