"""A table as plain data, which `render` draws: cells, columns and rows, the ranks and convergence
marks put on them, and the names and orderings every table builder shares.

Best and second best of a ranked column are marked (bold, underlined) on the printed values, so
values that print the same share a rank. Cells of a budget that did not converge carry ‡.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

import polars as pl

from nerplat.analysis.convergence import RULE


@dataclass(frozen=True)
class Cell:
    """One table cell: a number (with optional SE, delta, mark) or a text, or blank when neither."""

    value: float | None = None
    se: float | None = None
    sd: float | None = None  # spread over replicates: LaTeX prints mean ± sd
    delta: float | None = None
    significant: bool = False
    arrow: Literal["", "up", "down"] = ""
    text: str | None = None
    rank: int | None = None  # 1: best in its column (bold), 2: second (underlined)
    digits: int = 4
    unconverged: bool = False  # the cell's epoch budget did not converge: marked ‡

    def number(self) -> str:
        return "" if self.value is None else f"{self.value:.{self.digits}f}"


@dataclass(frozen=True)
class Column:
    group: str  # spanning header above `name`; "" when the table has one header row
    name: str
    ranked: bool = True


@dataclass(frozen=True)
class Row:
    label: str
    cells: tuple[Cell, ...]
    rule_above: bool = False  # a separating line before this row (e.g. an average row)


@dataclass(frozen=True)
class Table:
    name: str  # file stem, unique within a report
    caption: str
    row_header: str
    columns: tuple[Column, ...]
    rows: tuple[Row, ...]
    notes: tuple[str, ...] = field(default=())

    def has_groups(self) -> bool:
        return any(c.group for c in self.columns)


def ranked(table: Table) -> Table:
    """Marks best (1) and second best (2) printed value of each ranked column; higher is better."""
    rows = [list(r.cells) for r in table.rows]
    for j, column in enumerate(table.columns):
        if not column.ranked:
            continue
        printed = {float(r[j].number()) for r in rows if r[j].value is not None}
        if len(printed) < 2:
            continue
        best, second = sorted(printed, reverse=True)[:2]
        for r in rows:
            if r[j].value is not None:
                value = float(r[j].number())
                rank = 1 if value == best else 2 if value == second else None
                r[j] = replace(r[j], rank=rank)
    return replace(table, rows=tuple(replace(row, cells=tuple(c)) for row, c in zip(table.rows, rows)))


def convergence_noted(table: Table) -> Table:
    """Adds the ‡ footnote when some cell of the table is marked unconverged."""
    if not any(cell.unconverged for row in table.rows for cell in row.cells):
        return table
    return replace(table, notes=(*table.notes, f"‡ epoch budget not converged ({RULE}); see the dev-curve tables."))


def _unconverged(row: Mapping | None) -> bool:
    return row is not None and row.get("converged") is False


def slug(*parts: str | int | None) -> str:
    """A file-name-safe stem from label parts: slug("size", "conll2003", "low_resource(k=1)")."""
    text = "-".join(str(p) for p in parts if p not in (None, ""))
    return re.sub(r"[^a-z0-9_.]+", "-", text.lower()).strip("-.")


def natural_key(value: object) -> tuple:
    """Sort key reading digit runs as numbers: 'size=20' before 'size=100'; None last."""
    if value is None:
        return ((1,),)
    if isinstance(value, tuple):
        return tuple(natural_key(v) for v in value)
    return ((0,), *((0, int(t)) if t.isdigit() else (1, t) for t in re.split(r"(\d+)", str(value)) if t))


def method_order(methods: Sequence[str], baseline: str | None) -> list[str]:
    """Baseline first, then the others alphabetically: the papers list the baseline on top."""
    rest = sorted(m for m in set(methods) if m != baseline)
    return ([baseline] if baseline in methods else []) + rest


def cell_lookup(summary: pl.DataFrame, keys: Sequence[str]) -> dict[tuple, dict]:
    return {tuple(row[k] for k in keys): row for row in summary.iter_rows(named=True)}


def mean_cell(row: Mapping | None, digits: int, *, with_se: bool = False, **marks) -> Cell:
    """The cell of one summary row with `digits` decimals (blank when the setting was not run)."""
    if row is None:
        return Cell()
    se = row["se"] if with_se else None
    return Cell(value=row["mean"], se=se, sd=row.get("sd"), digits=digits, unconverged=_unconverged(row), **marks)


def n_note(rows: pl.DataFrame) -> str:
    if rows.is_empty():
        return "no replicates"
    low, high = rows["n"].min(), rows["n"].max()
    if low == high:
        return f"n = {low} replicate{'s' if low != 1 else ''} per cell"
    return f"n = {low}-{high} replicates per cell"


def where_text(*pairs: tuple[str, str | None]) -> str:
    return ", ".join(f"{k} {v}" for k, v in pairs if v)


def axis_groups(frame: pl.DataFrame, keys: Sequence[str]) -> list[tuple[dict, pl.DataFrame]]:
    """Sub-frames per distinct value of `keys`, in sorted order, with the key values as a dict."""
    if frame.is_empty():
        return []
    groups = frame.partition_by(list(keys), as_dict=True, maintain_order=True)
    return [(dict(zip(keys, k)), groups[k]) for k in sorted(groups, key=natural_key)]


def p_text(p: float | None) -> str:
    if p is None:
        return "n/a"
    return "<0.0001" if p < 1e-4 else f"{p:.4f}"
