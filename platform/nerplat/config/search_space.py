"""Search-space distributions: what a spec's `{uniform: [0, 1]}` becomes and what the searchers sample.

Plain frozen data shared by the spec layer (which parses them), the plan (whose arms carry them) and
the runner (which turns them into Ray Tune domains).
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal, Union

from pydantic import Field

from nerplat.config.frozen import Frozen


class Uniform(Frozen):
    """A float drawn uniformly from [low, high]."""

    kind: Literal["uniform"] = "uniform"
    low: float = Field(description="Smallest value.")
    high: float = Field(description="Largest value.")

    def contains(self, value: Any) -> bool:
        return _is_number(value) and self.low <= value <= self.high

    def grid_values(self, points_per_axis: int) -> list[float]:
        step = (self.high - self.low) / (points_per_axis - 1)
        return [self.low + i * step for i in range(points_per_axis - 1)] + [self.high]

    def label(self) -> str:
        return f"uniform({self.low:g}, {self.high:g})"


class LogUniform(Frozen):
    """A float whose logarithm is uniform on [log low, log high]; low > 0."""

    kind: Literal["loguniform"] = "loguniform"
    low: float = Field(gt=0, description="Smallest value (> 0).")
    high: float = Field(gt=0, description="Largest value.")

    def contains(self, value: Any) -> bool:
        return _is_number(value) and self.low <= value <= self.high

    def grid_values(self, points_per_axis: int) -> list[float]:
        ratio = self.high / self.low
        return [self.low * ratio ** (i / (points_per_axis - 1)) for i in range(points_per_axis - 1)] + [self.high]

    def label(self) -> str:
        return f"loguniform({self.low:g}, {self.high:g})"


class IntRange(Frozen):
    """An integer drawn uniformly from low..high, both included."""

    kind: Literal["int"] = "int"
    low: int = Field(description="Smallest value (included).")
    high: int = Field(description="Largest value (included).")

    def contains(self, value: Any) -> bool:
        return isinstance(value, int) and not isinstance(value, bool) and self.low <= value <= self.high

    def grid_values(self, points_per_axis: int) -> list[int]:
        """Evenly spaced integers: every one when the range has at most `points_per_axis`."""
        step = (self.high - self.low) / (points_per_axis - 1)
        return sorted({round(self.low + i * step) for i in range(points_per_axis)})

    def label(self) -> str:
        return f"int({self.low}, {self.high})"


class Choice(Frozen):
    """One of the listed values, each equally likely."""

    kind: Literal["choice"] = "choice"
    options: tuple[Any, ...] = Field(description="The values to choose from.")

    def contains(self, value: Any) -> bool:
        return value in self.options

    def grid_values(self, points_per_axis: int) -> list[Any]:
        return list(self.options)

    def label(self) -> str:
        return f"choice({', '.join(map(str, self.options))})"


Distribution = Annotated[Union[Uniform, LogUniform, IntRange, Choice], Field(discriminator="kind")]
DISTRIBUTION_KINDS = ("uniform", "loguniform", "int", "choice")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
