"""Every confirmatory verdict of a committed report (docs/results/<name>/verdicts.parquet) rests on a
registration in specs/registered/ that git dates before the first test evaluation of its runs, and
every committed registration reads as one (`analysis.evidence.late_registrations`; a late one
injected into a report is found: tests/unit/analysis/test_evidence.py)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from repo_paths import REPO

from nerplat.analysis.evidence import dated_registrations, late_registrations

REGISTERED = REPO / "specs" / "registered"
VERDICTS = sorted((REPO / "docs" / "results").glob("*/verdicts.parquet"))


@pytest.fixture(scope="module")
def registered():
    """The committed registrations with their git dates, read once (two git processes)."""
    return dated_registrations(REGISTERED)


def test_every_committed_registration_reads_and_is_intact(registered):
    edited = [str(r.path) for r in registered.values() if not r.registration.intact]
    assert not edited, f"registrations edited after they were written (register anew): {edited}"


@pytest.mark.parametrize("verdicts", VERDICTS, ids=lambda path: path.parent.name)
def test_every_confirmatory_verdict_was_registered_before_its_first_test_evaluation(verdicts: Path, registered):
    late = late_registrations(pl.read_parquet(verdicts), registered)
    assert not late, f"{verdicts}:\n" + "\n".join(late)
