"""Figures that hold still on a shared machine: every benchmark figure is measured `repeats` times
(at least `MIN_REPEATS`) and reported as its median with the min and max (`Spread`).

The two sides of a ratio are measured interleaved, A, B, A, B, ... (`interleaved`), so a drift of
the host (another process starting, the CPU's clock changing) slows both sides alike instead of one
of them, and each ratio is taken within one repeat before the median is. Single runs of `nerplat
bench train` one after another on an idle machine gave ratios far apart (docs/performance.md,
"Medians with their spread"): one run decides nothing.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from nerplat.errors import Problem, UserInputError

MIN_REPEATS = 5
DEFAULT_REPEATS = 5

T = TypeVar("T")


@dataclass(frozen=True)
class Spread:
    """One figure over its repeats; as JSON {"median": .., "min": .., "max": .., "repeats": [..]}."""

    median: float
    min: float
    max: float
    repeats: list[float]

    @classmethod
    def of(cls, values: Sequence[float]) -> Spread:
        if not values:
            raise ValueError("a spread needs at least one value")
        values = [float(value) for value in values]
        return cls(statistics.median(values), min(values), max(values), values)

    def text(self, digits: int) -> str:
        """`1.31 (1.25-1.47)`: the median, then the min and max in brackets."""
        return f"{self.median:.{digits}f} ({self.min:.{digits}f}-{self.max:.{digits}f})"


def check_repeats(repeats: int, flag: str = "--repeats") -> int:
    """`repeats` when it is at least `MIN_REPEATS`, else a message naming the flag."""
    if repeats < MIN_REPEATS:
        message = f"{flag} must be at least {MIN_REPEATS} (a median with its spread needs them), got {repeats}"
        raise UserInputError(Problem(message, path=flag))
    return repeats


def interleaved(sides: dict[str, Callable[[int], T]], repeats: int) -> dict[str, list[T]]:
    """Each side's measurement, `repeats` times, taken in turns: A(0), B(0), A(1), B(1), ...

    A side is called with the repeat's index (0-based)."""
    measured: dict[str, list[T]] = {name: [] for name in sides}
    for repeat in range(repeats):
        for name, measure in sides.items():
            measured[name].append(measure(repeat))
    return measured


def ratios(numerators: Sequence[float], denominators: Sequence[float]) -> Spread:
    """The spread of per-repeat ratios (each taken within its repeat, where both sides saw the same host)."""
    return Spread.of([a / b for a, b in zip(numerators, denominators, strict=True)])
