"""The analysis tests' real SQLite MLflow store (tests/support/analysis_store.py)."""

from analysis_store import store  # noqa: F401  (pytest fixture)
