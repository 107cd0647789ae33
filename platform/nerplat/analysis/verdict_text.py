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
    p_holm: str
    units: str  # "9 partitions", "6 seeds"
    direction: str  # direction_verdict (equivalent claims: the TOST's)
    magnitude: str  # magnitude_verdict, with its interval
    verdict: str  # the gated verdict, with the look that decided the interval and whether the runs converged
    power: str  # power at max units and the units for 0.8, with what those assume


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
    if row["decided_look"] is not None:
        verdict += f", interval decided at look {row['decided_look'] + 1}"
    magnitude = row.get("magnitude_verdict") or OLD_REPORT
    if row.get("magnitude_ci_low") is not None:  # a report older than the column has none
        magnitude += f" ([{signed(row['magnitude_ci_low'])}, {signed(row['magnitude_ci_high'])}])"
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
        where=", ".join(str(row[k]) for k in SETTING_COLUMNS if row.get(k) is not None),
        paper=row["direction"] if row["paper_effect"] is None or row.get("kind") == "equivalent" else signed(row["paper_effect"]),
        delta=signed(row["delta"]),
        interval=interval,
        p_holm=p_text(row["p_holm"]),
        units=units,
        direction=row.get("direction_verdict") or OLD_REPORT,
        magnitude=magnitude,
        verdict=verdict,
        power=power,
    )
