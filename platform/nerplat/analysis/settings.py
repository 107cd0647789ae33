"""What the analysis stage computes: the spec's `analysis` section, as plan.json carries it.

The runner writes the compiled plan (with an `analysis` object) as `plan.json` on the experiment's
summary run; `nerplat analyze` reads it from there and lets flags override single fields.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from nerplat.errors import Problem, UserInputError


class AnalysisSettings(BaseModel):
    """Statistics and table settings; every field has a default so a bare experiment is analysable."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    baseline: str | None = Field(
        None,
        description="Method every other method is tested against and shown as a delta to; "
        "None skips deltas and baseline tests.",
    )
    test: Literal["paired_t", "wilcoxon"] = Field(
        "paired_t",
        description="Paired test over runs matched by dataset, sampler, size, seed and partition.",
    )
    alpha: float = Field(0.05, gt=0, lt=1, description="Significance level, applied after Holm correction.")
    comparisons: tuple[tuple[str, str], ...] = Field(
        (), description="Extra method pairs [a, b] to test, besides every method against the baseline."
    )
    bootstrap_resamples: int = Field(
        1000, ge=10, le=1_000_000, description="Resamples of the non-parametric bootstrap (SE and CI)."
    )
    seed: int = Field(0, ge=0, description="Seed of the bootstrap; same seed, same numbers.")
    confidence: float = Field(0.95, gt=0, lt=1, description="Coverage of the bootstrap percentile intervals.")
    split: Literal["dev", "test"] = Field("test", description="Split whose metrics the tables report.")
    average: Literal["micro", "macro"] = Field(
        "micro", description="Averaging of the headline precision, recall and F1 (span level, over types)."
    )
    reference_sampler: str | None = Field(
        None,
        description="Sampler whose baseline runs start every precision-recall arrow of a dataset "
        "(resampling paper Fig. 1); None draws arrows from the baseline within each sampler.",
    )

    @model_validator(mode="after")
    def _pairs_are_distinct(self) -> AnalysisSettings:
        for a, b in self.comparisons:
            if a == b:
                raise ValueError(f"comparison [{a}, {b}] compares a method with itself")
        return self

    def headline(self, name: str) -> str:
        """Metric column of a headline measure: headline("f1") -> "test_micro_f1"."""
        return f"{self.split}_{self.average}_{name}"


def settings_from_mapping(values: dict, source: str, path: str = "analysis") -> AnalysisSettings:
    """Validates an `analysis` mapping (from plan.json or flags); every problem is reported at once."""
    try:
        return AnalysisSettings.model_validate(values)
    except ValidationError as error:
        problems = [
            Problem(
                f"{item['msg']} (got {item.get('input')!r})",
                source=source,
                path=".".join([path, *(str(p) for p in item["loc"])]),
            )
            for item in error.errors()
        ]
        raise UserInputError(problems) from None
