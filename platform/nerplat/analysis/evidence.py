"""Whether a verdict is confirmatory: its claim was registered (`analysis.registrations`), its runs
served that registration, the registration is unchanged since, and git dates it before the first
test evaluation among the claim's runs (MLflow's timestamps). Any other verdict is exploratory, and
`evidence_reason` says why (the verdicts.parquet columns of the registrations' contract):

  registration      the digest the claim's runs served (their `nerplat.registrations` tag), or null
  evidence          "confirmatory" or "exploratory"
  evidence_reason   null when confirmatory; else "no registration" (none served, or one file among
                    runs that served none), "registration missing (...)", "registration changed since
                    the run (digest ...)", "registration not committed (...)", "registered <date>,
                    after the first test evaluation <date>", or "no test evaluation time recorded"
  first_test_at     the first test evaluation among the replicate runs of the claim's arms, ISO UTC:
                    the earliest MLflow timestamp of a run's test metrics (`run_frames`' column
                    test_evaluated_at); for frames that predate that column, the first training step
                    (time_first_step_unix), which comes before it and so can only make a
                    registration look later, never earlier

Every run of the claim's arms counts, not only the units the verdict read: a test score seen before
the registration is seen whichever look it belongs to.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import polars as pl

from nerplat.analysis.registrations import Registration, load_registrations, registered_dates

EVIDENCE_SCHEMA = {
    "registration": pl.String(), "evidence": pl.String(), "evidence_reason": pl.String(), "first_test_at": pl.String(),
}
TEST_TIME_COLUMNS = ("test_evaluated_at", "time_first_step_unix")  # the first is exact, the second a lower bound


@dataclass(frozen=True)
class DatedRegistration:
    """A registration file and the date of the commit that added it as it is (None: not committed)."""

    registration: Registration
    registered_at: datetime | None


def dated_registrations(folder: Path | None) -> dict[str, DatedRegistration]:
    """The registrations in `folder` (none for None or a missing folder) with their git dates."""
    found = load_registrations(folder) if folder is not None else {}
    dates = registered_dates(registration.path for registration in found.values())
    return {claim: DatedRegistration(registration, dates[registration.path.resolve()])
            for claim, registration in found.items()}


def iso(moment: datetime) -> str:
    """'2026-12-07T05:30:00Z': a moment in UTC, as the evidence columns write it."""
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def with_evidence(
    verdicts: pl.DataFrame, replicates: pl.DataFrame, registered: Mapping[str, DatedRegistration]
) -> pl.DataFrame:
    """`verdicts` with the evidence columns (module docstring) filled in, in place of any they had."""
    rows = [_evidence(row, replicates, registered) for row in verdicts.iter_rows(named=True)]
    filled = pl.DataFrame(rows, schema=EVIDENCE_SCHEMA)
    order = [*verdicts.columns, *(c for c in EVIDENCE_SCHEMA if c not in verdicts.columns)]
    return verdicts.drop([c for c in EVIDENCE_SCHEMA if c in verdicts.columns]).hstack(filled).select(order)


def _evidence(row: dict[str, Any], replicates: pl.DataFrame, registered: Mapping[str, DatedRegistration]) -> dict[str, Any]:
    claim = row["claim"]
    runs = replicates.filter(pl.col("arm").is_in(row["arms"] or [])) if "arm" in replicates.columns else replicates.clear()
    first = first_test_time(runs)
    tags = runs["registrations"].to_list() if "registrations" in runs.columns else [None] * runs.height
    served = [_served(text, claim) for text in tags]
    digests = sorted({d for d in served if d is not None})
    found = {"registration": digests[0] if len(digests) == 1 else None, "first_test_at": iso(first) if first else None}
    return found | _verdict(claim, digests, served.count(None), len(served), registered.get(claim), first)


def _verdict(claim: str, digests: list[str], unserved: int, runs: int, dated: DatedRegistration | None,
             first: datetime | None) -> dict[str, str | None]:
    """The evidence and its reason from what the runs served and what the registration is now."""
    def exploratory(reason: str) -> dict[str, str | None]:
        return {"evidence": "exploratory", "evidence_reason": reason}

    if not digests:
        return exploratory("no registration")
    if len(digests) > 1:
        return exploratory(f"its runs served different registrations ({', '.join(d[:12] for d in digests)})")
    if unserved:
        return exploratory(f"no registration for {unserved} of its {runs} runs")
    digest = digests[0]
    if dated is None:
        return exploratory(f"registration missing (its runs served digest {digest[:12]}; no registered/{claim}.yaml)")
    registration = dated.registration
    if not registration.intact:
        return exploratory(f"registration changed since the run (digest {digest[:12]}; the file was edited: its text "
                           "no longer hashes to its digest)")
    if registration.digest != digest:
        return exploratory(f"registration changed since the run (digest {digest[:12]}, now {registration.digest[:12]})")
    if dated.registered_at is None:
        return exploratory(f"registration not committed (digest {digest[:12]}): commit it before the run")
    if first is None:
        return exploratory("no test evaluation time recorded")
    if dated.registered_at >= first:
        return exploratory(f"registered {iso(dated.registered_at)}, after the first test evaluation {iso(first)}")
    return {"evidence": "confirmatory", "evidence_reason": None}


def _served(text: str | None, claim: str) -> str | None:
    """The digest a run's `nerplat.registrations` tag names for `claim`, or None."""
    if not text:
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return None
    digest = value.get(claim) if isinstance(value, dict) else None
    return digest if isinstance(digest, str) else None


def first_test_time(runs: pl.DataFrame) -> datetime | None:
    """The first test evaluation among `runs` (module docstring), or None when no run records one."""
    for column in TEST_TIME_COLUMNS:
        if column in runs.columns and runs[column].drop_nulls().len():
            return datetime.fromtimestamp(float(runs[column].drop_nulls().min()), tz=timezone.utc)
    return None


def late_registrations(verdicts: pl.DataFrame, registered: Mapping[str, DatedRegistration]) -> list[str]:
    """One line per confirmatory verdict whose registration git no longer dates before its first test
    evaluation (a registration replaced since, rewritten history, a report edited by hand): the check
    the committed reports are held to (tests/regression)."""
    needed = {"evidence", "first_test_at", "registration"}
    if not needed <= set(verdicts.columns):
        return []
    lines = []
    for row in verdicts.filter(pl.col("evidence") == "confirmatory").iter_rows(named=True):
        dated = registered.get(row["claim"])
        first = datetime.fromisoformat(row["first_test_at"].replace("Z", "+00:00")) if row["first_test_at"] else None
        if dated is None or dated.registration.digest != row["registration"]:
            lines.append(f"{row['claim']}: confirmatory, but its registration (digest {row['registration']}) is not the file's")
        elif dated.registered_at is None or first is None or dated.registered_at >= first:
            when = iso(dated.registered_at) if dated.registered_at else "uncommitted"
            lines.append(f"{row['claim']}: confirmatory, but registered {when}, not before its first test evaluation "
                         f"{row['first_test_at']}")
    return lines
