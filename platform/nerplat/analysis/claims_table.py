"""The claims table of many reports: one verdict per registered claim, and the readings chosen after results.

Registered claims (`<spec folder>/registered/<claim>.yaml`, `analysis.registrations`) get one row
each, from all of their confirmatory evidence: the verdicts.parquet rows (of every report under the
results folder) whose `evidence` is confirmatory and whose `registration` is the file's digest. Their
units (`unit_keys`, `unit_differences`) are joined in the registration's unit order (a unit that two
reports both hold counts once, from the report first by name; a unit the registration does not list
is not its evidence) and judged by `sequential.decide` against the registration's own boundaries: more units
later are more looks of the same spending sequence, never a fresh alpha, and no look already taken
is judged again at another level. The row reads:

  decided         its verdict at look k of K, with the stage-wise p and the margin over the boundary;
                  withheld when a run behind it hit its cap: "inconclusive (not converged), interval
                  decided at look k of K", final, as the design stopped its arms there
  undecided       "undecided after look k of K" (looks to come, or a claim dropped for budget: it
                  keeps its row), or "inconclusive after all K looks" ("after its one look"), with
                  "(not converged)" when a run behind it hit its cap
  no evidence     "registered, not yet run" (or the units run so far, short of the first look)

gated, like a report's verdict, by convergence: every run behind the rows stopped by patience.

Every other row (no registration, a changed one, registered after its first test evaluation, or a
report from before registrations) is exploratory: the design was chosen after results were seen. Those
go to a separate table, one row per claim, with each report's estimate and a pooled one
(`pooling.dersimonian_laird`: random effects over the per-report estimates and their standard errors)
as a reading beside the verdict, never one.

`claims_summary` is the one-screen summary above the README's prose; `forest_plot` draws every row's
interval against the paper's effect.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl
import yaml

from nerplat.analysis.boundaries import boundaries, stagewise_p
from nerplat.analysis.pooling import Pooled, dersimonian_laird
from nerplat.analysis.registrations import Registration
from nerplat.analysis.sequential import SequentialDecision, VerdictRule, decide
from nerplat.analysis.table_model import Cell, Column, Row, Table, p_text
from nerplat.analysis.verdict_text import epochs_text, verdict_text

if TYPE_CHECKING:
    from matplotlib.figure import Figure

NOT_YET_RUN = "registered, not yet run"
CONFIRMATORY = "confirmatory"
FIXED_SPENDING = "pocock"  # a registration without spending is one look, where every spending function spends alpha


@dataclass(frozen=True)
class RegisteredRow:
    """One registered claim's standing over all its confirmatory evidence."""

    registration: Registration
    claim: dict[str, Any]  # the registration's claim, as the paper states it
    reports: tuple[str, ...]
    units: int  # units joined (in the registration's list)
    decision: SequentialDecision | None  # None before the first look's units
    converged: bool | None
    p_stagewise: float | None
    margin: float | None  # |t| beyond the deciding look's boundary
    boundary: float | None
    epochs: str = ""  # per report, epochs the method's / partner's runs trained beside the cap

    @property
    def verdict(self) -> str:
        looks = len(self.registration.looks)
        if self.decision is None:
            return NOT_YET_RUN if not self.reports else f"registered, {self.units} of {self.registration.looks[0]} units run"
        taken = len(self.decision.looks)
        gate = "" if self.converged else (" (not converged)" if self.converged is False else " (convergence not recorded)")
        if self.decision.decided_look is not None:
            said = self.decision.verdict if self.converged else "inconclusive"
            if self.converged:
                return f"{said}, at look {taken} of {looks}"
            return f"{said}{gate}, interval decided at look {taken} of {looks}"
        if taken < looks:
            return f"undecided after look {taken} of {looks}"
        return f"inconclusive{gate} after " + ("its one look" if looks == 1 else f"all {looks} looks")

    @property
    def standing(self) -> str:
        """The verdict without where it stands: what the summary counts."""
        if self.decision is None:
            return NOT_YET_RUN
        if self.decision.decided_look is not None:
            return self.decision.verdict if self.converged else "inconclusive"
        return "inconclusive" if len(self.decision.looks) == len(self.registration.looks) else "undecided"

    @property
    def interval(self) -> tuple[float, float] | None:
        if self.decision is None:
            return None
        last = self.decision.looks[-1]
        return last.ci_low, last.ci_high


@dataclass(frozen=True)
class ExploratoryRow:
    """One claim's exploratory reports and their pooled estimate."""

    claim: str
    rows: tuple[dict[str, Any], ...]  # verdicts.parquet rows, report order
    pooled: Pooled | None


def claim_rule(claim: dict[str, Any]) -> VerdictRule:
    """The verdict rule of a claim in its JSON form (a registration's `claim`)."""
    if claim.get("kind") == "equivalent":
        return VerdictRule(margin=float(claim["margin"]))
    effect = claim.get("effect")
    side = (1 if effect > 0 else -1) if effect is not None else (1 if claim.get("direction") == "better" else -1)
    return VerdictRule(side=side, extrapolation=bool(claim.get("extrapolation")))


def is_confirmatory(frame: pl.DataFrame) -> pl.Expr:
    """Rows that are confirmatory evidence of the registration they served (a frame from before the
    evidence columns has none)."""
    if "evidence" not in frame.columns:
        return pl.lit(False)
    return (pl.col("evidence") == CONFIRMATORY).fill_null(False)


def registered_rows(verdicts: pl.DataFrame, registrations: dict[str, Registration]) -> list[RegisteredRow]:
    """One row per registration, from the confirmatory rows of `verdicts` (every report's, with a
    `report` column) that served its digest."""
    found = []
    confirmatory = verdicts.filter(is_confirmatory(verdicts)) if not verdicts.is_empty() else verdicts
    for claim_id, registration in sorted(registrations.items()):
        claim = yaml.safe_load(registration.path.read_text(encoding="utf-8"))["claim"]
        rows = (
            confirmatory.filter(pl.col("claim") == claim_id, pl.col("registration") == registration.digest).rows(named=True)
            if not confirmatory.is_empty() else []
        )
        found.append(_registered_row(registration, claim, rows))
    return found


def _registered_row(registration: Registration, claim: dict[str, Any], rows: list[dict[str, Any]]) -> RegisteredRow:
    order = {unit: position for position, unit in enumerate(registration.units)}
    rows = sorted(rows, key=lambda row: row["report"])
    joined: dict[int, float] = {}
    for row in rows:
        for key, difference in zip(row.get("unit_keys") or [], row.get("unit_differences") or []):
            if key in order and key not in joined:
                joined[key] = difference
    differences = [joined[key] for key in sorted(joined, key=order.__getitem__)]
    flags = [row.get("converged") for row in rows]
    converged = False if False in flags else (None if None in flags or not flags else True)
    reports = tuple(dict.fromkeys(row["report"] for row in rows))
    epochs = "; ".join(f"{row['report']}: {_epochs(row)}" for row in rows)
    if len(differences) < registration.looks[0]:
        return RegisteredRow(registration, claim, reports, len(differences), None, converged, None, None, None, epochs)
    design = boundaries(registration.looks, registration.max_units, registration.alpha,
                        registration.spending or FIXED_SPENDING)
    rule = claim_rule(claim)
    decision = decide(differences, rule, design)
    last = decision.looks[-1]
    used = differences[: last.pairs]
    mean = sum(used) / len(used)
    sd = math.sqrt(sum((d - mean) ** 2 for d in used) / (len(used) - 1))
    t = mean / (sd / math.sqrt(len(used))) if sd > 0 else math.nan
    boundary = design.critical_t[last.index]
    stopped = decision.decided_look is not None or last.index == len(design.looks) - 1
    p = stagewise_p(design, last.index, t) if stopped and rule.margin is None and math.isfinite(t) else None
    margin = abs(t) - boundary if decision.decided_look is not None and rule.margin is None and math.isfinite(t) else None
    return RegisteredRow(registration, claim, reports, len(differences), decision, converged, p, margin, boundary, epochs)


def _epochs(row: dict[str, Any]) -> str:
    return f"{epochs_text(row, 'method')} / {epochs_text(row, 'partner')}"


def exploratory_rows(verdicts: pl.DataFrame) -> list[ExploratoryRow]:
    """Every row that is not confirmatory evidence, grouped by claim, with its pooled estimate."""
    if verdicts.is_empty():
        return []
    rest = verdicts.filter(~is_confirmatory(verdicts))
    found = []
    for group in rest.partition_by("claim", maintain_order=True):  # a claim's id names its setting (one per registration)
        rows = tuple(group.rows(named=True))
        pooled = dersimonian_laird([r["delta"] if r["delta"] is not None else math.nan for r in rows], [_se(r) for r in rows])
        found.append(ExploratoryRow(rows[0]["claim"], rows, pooled))
    return sorted(found, key=lambda row: row.claim)


def _se(row: dict[str, Any]) -> float:
    """The standard error of a row's estimate, from its interval and level (every report has them):
    the half-width over the critical t at the interval's level on n - 1 degrees of freedom."""
    from scipy.stats import t as student_t

    units = row.get("n_units") or row.get("n_pairs")
    if row["ci_low"] is None or row["ci_high"] is None or row.get("ci_level") is None or not units or units < 2:
        return math.nan
    critical = float(student_t.isf((1.0 - row["ci_level"]) / 2.0, units - 1))
    return (row["ci_high"] - row["ci_low"]) / 2.0 / critical


def pooled_reading(row: ExploratoryRow) -> str:
    """What the pooled interval says, in the claim's own terms: a reading, not a verdict."""
    pooled, first = row.pooled, row.rows[0]
    if pooled is None:
        return "n/a"
    low, high = pooled.ci_low, pooled.ci_high
    if first.get("kind") == "equivalent":
        margin = _margin_of(first)
        if margin is None:
            return "n/a"
        if -margin < low and high < margin:
            return "within the margin"
        return f"beyond the margin (±{margin:g})" if low >= margin or high <= -margin else "reaches past the margin"
    side = 1 if (first["paper_effect"] or 0) > 0 or first["direction"] == "better" else -1
    if low > 0 or high < 0:
        # a setting the paper never ran cannot contradict it: the reading is against the claim there
        side_of, against = ("the claim's side", "the claim") if first.get("extrapolation") else ("the paper's side", "the paper")
        reading = f"on {side_of}" if (low > 0) == (side > 0) else f"against {against}"
        reading += " (extrapolation)" if first.get("extrapolation") else ""
    else:
        reading = "includes 0"
    effect = first["paper_effect"]
    if effect is not None and not low <= effect <= high:
        reading += "; paper's effect outside"
    return reading


def _margin_of(row: dict[str, Any]) -> float | None:
    """An on-par claim's margin from its row's direction, written `on par (±m)` (`verdicts._identity`)."""
    text = str(row.get("direction") or "")
    if "±" not in text:
        return None
    return float(text.split("±", 1)[1].rstrip(")"))


def _p_kind(registration: Registration) -> str:
    """Which p a row shows: a sequential design's stage-wise p, or a fixed design's p at its one look."""
    return "stage-wise" if registration.spending else "fixed"


def registered_table(rows: list[RegisteredRow]) -> Table | None:
    """The registered claims: one row each, the verdict first."""
    if not rows:
        return None
    body = []
    for row in rows:
        claim, registration = row.claim, row.registration
        interval = row.interval
        delta = None if row.decision is None else _mean_of(row)
        cells = (
            row.verdict, registration.metric.removeprefix("test_"), f"{claim.get('method')} vs {claim.get('partner')}",
            _paper_text(claim), "n/a" if delta is None else f"{delta:+.4f}",
            "n/a" if interval is None else f"[{interval[0]:+.4f}, {interval[1]:+.4f}]",
            "none" if row.p_stagewise is None else f"{p_text(row.p_stagewise)} ({_p_kind(registration)})",
            "" if row.margin is None else f"{row.margin:+.3f} over {row.boundary:.3f}",
            f"{row.units} of {registration.max_units} {registration.unit}s",
            ", ".join(f"[{r}]({r}/report.md)" for r in row.reports) or "none yet", row.epochs or "none yet",
            f"{registration.digest[:12]} ({registration.spending or 'fixed'}, looks at {list(registration.looks)})",
        )
        body.append(Row(registration.claim_id, tuple(Cell(text=t) for t in cells)))
    names = ("Verdict", "Metric", "Comparison", "Paper's effect", "Ours (Δ)", "Interval", "p",
             "Margin (t over boundary)", "Units", "Reports", "Epochs trained: method / partner", "Registration (digest, design)")
    caption = (
        "Registered claims: one verdict each, from all of its confirmatory evidence (the runs that served its "
        "registration, committed before their first test evaluation) under the design registered before it. The units of "
        "every such report are joined in the registration's order and judged look by look against its boundaries: more "
        "units are more looks of one spending sequence, never a fresh alpha. The interval is the repeated interval of the "
        "last look taken; p the stage-wise p once a sequential claim stopped (a fixed design's p at its one look); "
        "margin a decided claim's |t| minus its boundary."
    )
    return Table("registered", caption, "Claim", tuple(Column("", n, ranked=False) for n in names), tuple(body))


def _mean_of(row: RegisteredRow) -> float:
    last = row.decision.looks[-1]
    return (last.ci_low + last.ci_high) / 2.0


def _paper_text(claim: dict[str, Any]) -> str:
    if claim.get("kind") == "equivalent":
        return f"on par (±{claim.get('margin'):g})"
    effect = claim.get("effect")
    return f"{effect:+.4f}" if effect is not None else str(claim.get("direction"))


def exploratory_table(rows: list[ExploratoryRow]) -> Table | None:
    """The exploratory readings: one row per claim, each report's estimate and the pooled one."""
    if not rows:
        return None
    body = []
    for row in rows:
        first, pooled = row.rows[0], row.pooled
        text = verdict_text(first)
        readings = "; ".join(_reading(r) for r in row.rows)
        pooled_text = "n/a" if pooled is None else (
            f"{pooled.estimate:+.4f} [{pooled.ci_low:+.4f}, {pooled.ci_high:+.4f}] over {pooled.runs} "
            f"report{'s' if pooled.runs != 1 else ''}, tau {math.sqrt(pooled.tau2):.4f}"
        )
        cells = (text.metric, text.comparison, text.where, text.paper, pooled_text, pooled_reading(row), readings)
        body.append(Row(row.claim, tuple(Cell(text=t) for t in cells)))
    names = ("Metric", "Comparison", "Where", "Paper's effect", "Pooled Δ [95%] (DerSimonian-Laird)", "Pooled reading",
             "Reports: Δ, interval, units, epochs trained (method / partner), verdict (why exploratory)")
    caption = (
        "Exploratory, chosen after results: runs that served no registration, or one made or changed after test scores "
        "were seen, or reports from before registrations. Their designs (which runs, how many units, when to stop) were "
        "chosen with results in view, so their verdicts confirm nothing. The pooled estimate is random effects "
        "(DerSimonian & Laird 1986) over the reports' estimates and standard errors, at 95%: a reading beside the "
        "verdicts, never one."
    )
    return Table("exploratory", caption, "Claim", tuple(Column("", n, ranked=False) for n in names), tuple(body))


def _reading(row: dict[str, Any]) -> str:
    """One report's row in the exploratory table: a link, its estimate, interval, units and verdict, and why exploratory."""
    text = verdict_text(row)
    why = f" ({row['evidence_reason']})" if row.get("evidence_reason") else ""
    return (f"[{row['report']}]({row['report']}/report.md) {text.delta} {text.interval} over {text.units}, "
            f"{_epochs(row)}: {row['verdict']}{why}")


def claims_summary(registered: list[RegisteredRow], exploratory: list[ExploratoryRow], forest: str | None) -> str:
    """The one-screen summary above the README's prose: how many claims, their verdicts, the forest plot."""
    counts = Counter(row.standing for row in registered)
    said = ", ".join(f"{n} {verdict}" for verdict, n in counts.most_common()) or "none"
    readings = Counter(pooled_reading(row).split(";")[0].split(" (")[0] for row in exploratory)
    read = ", ".join(f"{n} {reading}" for reading, n in readings.most_common()) or "none"
    lines = [
        f"**{len(registered)} registered claims**: {said}. "
        f"**{len(exploratory)} exploratory claim readings** (chosen after results; pooled over their reports): {read}.",
        "",
    ]
    if forest:
        lines += [f"![Our intervals against the papers' effects]({forest})", ""]
    lines.append("The tables below (generated) give every claim; the prose after them, each run.")
    return "\n".join(lines) + "\n"


def forest_plot(registered: list[RegisteredRow], exploratory: list[ExploratoryRow]) -> Figure:
    """Every claim's interval (registered: the last look's repeated interval; exploratory: the pooled
    95% interval) against the paper's effect (a cross), on one axis of method minus partner."""
    from matplotlib.figure import Figure

    lines: list[tuple[str, tuple[float, float], float | None, str]] = []
    for row in registered:
        if row.interval is not None:
            lines.append((f"{row.registration.claim_id} (registered)", row.interval, row.claim.get("effect"), "black"))
    for row in exploratory:
        if row.pooled is not None:
            lines.append((f"{row.claim} (pooled, exploratory)", (row.pooled.ci_low, row.pooled.ci_high),
                          row.rows[0]["paper_effect"], "tab:gray"))
    figure = Figure(figsize=(7.5, 0.9 + 0.28 * max(len(lines), 1)), layout="constrained")
    axes = figure.add_subplot()
    for y, (_, (low, high), effect, colour) in enumerate(reversed(lines)):
        axes.plot([low, high], [y, y], color=colour, linewidth=2)
        axes.plot([(low + high) / 2], [y], "o", color=colour, markersize=3)
        if effect is not None:
            axes.plot([effect], [y], "x", color="tab:red", markersize=6)
    axes.axvline(0.0, color="0.6", linewidth=0.8)
    axes.set_yticks(range(len(lines)), [label for label, *_ in reversed(lines)], fontsize=7)
    axes.set_xlabel("method - partner (the claim's metric); x: the paper's effect", fontsize=8)
    axes.tick_params(axis="x", labelsize=7)
    return figure


def save_forest_plot(figure: Figure, path: Path) -> None:
    """The PNG, without the date or software metadata that would make reruns differ."""
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110, metadata={"Software": None})
