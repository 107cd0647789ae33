"""Figures that hold still on a shared machine: every benchmark figure is measured `repeats` times
(at least `MIN_REPEATS`) and reported as its median with the min and max (`Spread`).

The two sides of a ratio are measured interleaved, A, B, A, B, ... (`interleaved`), so a drift of
the host (another process starting, the CPU's clock changing) slows both sides alike instead of one
of them, and each ratio is taken within one repeat before the median is. Single runs of `nerplat
bench train` one after another on an idle machine gave ratios far apart (docs/performance.md,
"Medians with their spread"): one run decides nothing.

The integration tests check that each benchmark runs end to end and reports its spreads, not its
figures: they lower the floor with the environment variable `NERPLAT_BENCH_MIN_REPEATS` and run 2
repeats, where 5 would cost each test 2.5 times as much.
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from nerplat.errors import Problem, UserInputError

MIN_REPEATS = 5
MIN_REPEATS_VARIABLE = "NERPLAT_BENCH_MIN_REPEATS"
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
    """`repeats` when it is at least the floor (`min_repeats`), else a message naming the flag."""
    floor = min_repeats()
    if repeats < floor:
        message = f"{flag} must be at least {floor} (a median with its spread needs them), got {repeats}"
        raise UserInputError(Problem(message, path=flag))
    return repeats


def min_repeats() -> int:
    """The floor of `--repeats`: `MIN_REPEATS`, or a positive integer in `NERPLAT_BENCH_MIN_REPEATS`."""
    value = os.environ.get(MIN_REPEATS_VARIABLE)
    if value is None:
        return MIN_REPEATS
    if not value.isdigit() or int(value) < 1:
        message = f"{MIN_REPEATS_VARIABLE} must be a positive integer, got {value!r}"
        raise UserInputError(Problem(message, path=MIN_REPEATS_VARIABLE))
    return int(value)


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
