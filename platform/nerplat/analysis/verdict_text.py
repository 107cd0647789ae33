"""How a verdicts.parquet row reads: the same text in the report, the README table and the terminal.

Kept apart from `verdicts`, which computes the rows: this module only formats them, and reads rows of
any age (a column a file from before it existed lacks shows OLD_REPORT).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from nerplat.analysis.stats import MAX_PAIRS
from nerplat.analysis.table_model import p_text
from nerplat.analysis.verdicts import SETTING_COLUMNS

OLD_REPORT = "n/a (old report)"  # a column a verdicts.parquet written before it existed lacks


@dataclass(frozen=True)
class VerdictText:
    """One verdict row as people read it, the same in the report, the README table and the terminal."""

    comparison: str  # "mom vs ce", and how a best_other partner was chosen
    where: str  # dataset, sampler, size
    paper: str  # the paper's effect, or its direction, or "on par (±margin)"
    delta: str
    interval: str
    p: str  # the p the verdict's rule is equivalent to: stage-wise (sequential), Holm's (fixed; TOST's for on par), or none
    margin: str  # a decided row: |t| beyond its boundary ("+0.031 over 3.252"); "" while undecided
    units: str  # "9 partitions", "6 seeds"
    direction: str  # direction_verdict (equivalent claims: the TOST's)
    magnitude: str  # magnitude_verdict, with its interval
    verdict: str  # the gated verdict, with the look that decided the interval and whether the runs converged
    power: str  # power at max units and the units for 0.8, with what those assume
    metric: str  # the verdict's column, without its split: "macro_f1"
    evidence: str  # "confirmatory", or "exploratory (why)": whether a registration made before the runs stands behind it


def rule_p(row: dict[str, Any]) -> str:
    """The p a row's verdict rule is equivalent to (p <= alpha at the claim's level): the stage-wise p
    of a stopped sequential design's superior claim, none for another sequential row (a repeated
    interval has no fixed-design p), else the fixed design's Holm-adjusted p (the TOST's for on par)."""
    if str(row.get("design") or "").startswith("sequential"):
        if "p_stagewise" not in row:
            return OLD_REPORT
        return "none" if row["p_stagewise"] is None else f"{p_text(row['p_stagewise'])} (stage-wise)"
    which = "Holm, TOST" if row.get("kind") == "equivalent" else "Holm"
    return f"{p_text(row.get('p_holm'))} ({which})"


def epochs_text(row: dict[str, Any], side: str) -> str:
    """Epochs one side's replicates trained (their mean) beside its cap: "14.2 of 30 ep", or the cap alone."""
    cap, trained = row.get(f"{side}_epochs"), row.get(f"{side}_epochs_trained")
    if trained is None:
        return f"cap {cap or '?'} ep"
    return f"{trained:.1f} of {cap or '?'} ep"


def verdict_text(row: dict[str, Any], decimals: int = 4) -> VerdictText:
    """The text of a verdicts.parquet row (`verdicts`), numbers to `decimals` places. A file from
    before a column existed shows OLD_REPORT for it (`nerplat reanalyze` brings it up to date)."""
    def signed(value: float | None) -> str:
        return "n/a" if value is None else f"{value:+.{decimals}f}"

    interval = "n/a" if row["ci_low"] is None else f"[{signed(row['ci_low'])}, {signed(row['ci_high'])}]"
    verdict = row["verdict"]
    converged = row["converged"]
    if converged is None:
        verdict += " (convergence not recorded)"
    elif not converged:
        verdict += " (not converged)"
    if row.get("decided_look") is not None:
        verdict += f", interval decided at look {row['decided_look'] + 1}"
    magnitude = row.get("magnitude_verdict") or OLD_REPORT
    if row.get("magnitude_ci_low") is not None:  # a report older than the column has none
        magnitude += f" ([{signed(row['magnitude_ci_low'])}, {signed(row['magnitude_ci_high'])}])"
    if row.get("paper_in_interval") is False:
        magnitude += "; paper's effect outside our interval"
    margin = ""
    if row.get("boundary_margin") is not None and row.get("boundary_t") is not None:
        margin = f"{row['boundary_margin']:+.3f} over {row['boundary_t']:.3f}"
    comparison = f"{row['method']} vs {row['partner']}"
    if row.get("partner_chosen_at"):
        comparison += f" (best other on dev, {row['partner_chosen_at']})"
    if row.get("n_units") is not None:
        units = f"{row['n_units']} {row['unit']}{'s' if row['n_units'] != 1 else ''}"
    else:
        units = f"{row['n_pairs']} pairs"
    if "units_needed" in row:
        power = "n/a" if row["power"] is None else f"{row['power']:.2f}"
        if row.get("units_needed_at"):  # a report older than the column has none
            needed = f"more than {MAX_PAIRS:,}" if row["units_needed"] is None else row["units_needed"]
            power += f"; {needed} for 0.8 at the {row['units_needed_at']}"
        elif row["units_needed"] is not None:
            power += f"; {row['units_needed']} for 0.8"
    else:
        power = OLD_REPORT
    return VerdictText(
        comparison=comparison,
        where=", ".join(str(row[k]) for k in SETTING_COLUMNS if row.get(k) is not None)
        + (" (an extrapolation: the paper did not run it)" if row.get("extrapolation") else ""),
        paper=row["direction"] if row["paper_effect"] is None or row.get("kind") == "equivalent" else signed(row["paper_effect"]),
        delta=signed(row["delta"]),
        interval=interval,
        p=rule_p(row),
        margin=margin,
        units=units,
        direction=row.get("direction_verdict") or OLD_REPORT,
        magnitude=magnitude,
        verdict=verdict,
        power=power,
        metric=str(row.get("metric") or "").removeprefix("test_").removeprefix("dev_"),
        evidence=evidence_text(row),
    )


def evidence_text(row: dict[str, Any]) -> str:
    """"confirmatory", or "exploratory (no registration)" with `evidence.py`'s reason."""
    if not row.get("evidence"):
        return OLD_REPORT
    return row["evidence"] + (f" ({row['evidence_reason']})" if row.get("evidence_reason") else "")
