"""Fixtures shared by the spec and plan tests (tests/support/spec_testing.py)."""

from spec_testing import catalog, match_snapshot, write_spec  # noqa: F401  (pytest fixtures)
