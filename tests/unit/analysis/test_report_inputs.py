"""A report's inputs digest changes with what the verdicts' evidence read of the registrations."""

from __future__ import annotations

import polars as pl

from nerplat.analysis.report_inputs import inputs_digest
from nerplat.analysis.run_frames import ExperimentRuns
from nerplat.analysis.settings import AnalysisSettings


def test_a_registration_committed_since_builds_the_report_again():
    runs = ExperimentRuns("1", pl.DataFrame(), pl.DataFrame(), "s", None, pl.DataFrame(), pl.DataFrame())
    settings = AnalysisSettings()
    uncommitted = inputs_digest(runs, settings, ("md",), {"c": ["abc", True, "None"]})
    committed = inputs_digest(runs, settings, ("md",), {"c": ["abc", True, "2026-12-07 05:00:00+00:00"]})
    assert uncommitted != committed
    assert inputs_digest(runs, settings, ("md",)) == inputs_digest(runs, settings, ("md",), {})
