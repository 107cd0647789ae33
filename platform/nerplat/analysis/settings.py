"""What the analysis stage computes: the spec's `analysis` section, as plan.json carries it.

The runner writes the compiled plan (with an `analysis` object) as `plan.json` on the experiment's
summary run; `nerplat analyze` reads it from there and lets flags override single fields.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from nerplat.config.experiment import Analysis, Claim, Sequential
from nerplat.validation import validated


class AnalysisSettings(Analysis):
    """The spec's `analysis` section (`plan.model.Analysis`) plus the split the replicates were scored on.

    Every field has a default, so a bare experiment is analysable.
    """

    split: Literal["dev", "test"] = Field(
        "test", description="Split whose metrics the tables report (the plan's replicate split)."
    )
    claims: tuple[Claim, ...] = Field((), description="The plan's claims: each becomes a row of verdicts.parquet.")
    sequential: Sequential | None = Field(None, description="The plan's group-sequential replication design, if any.")
    display: dict[str, str] = Field(
        default_factory=dict, description="Method key -> its name in LaTeX tables (the methods' `display:`)."
    )

    @model_validator(mode="after")
    def _pairs_are_distinct(self) -> AnalysisSettings:
        for a, b in self.comparisons:
            if a == b:
                raise ValueError(f"comparison [{a}, {b}] compares a method with itself")
        return self

    def claim_metric(self, claim: Claim) -> str:
        """Metric column of a claim: its metric on the replicates' split ("test_macro_f1")."""
        return f"{self.split}_{claim.metric}"

    def headline(self, name: str) -> str:
        """Metric column of a headline measure: headline("f1") -> "test_micro_f1"."""
        return f"{self.split}_{self.average}_{name}"


def settings_from_mapping(values: dict, source: str, path: str = "analysis") -> AnalysisSettings:
    """Validates an `analysis` mapping (from plan.json or flags); every problem is reported at once."""
    return validated(AnalysisSettings, values, at=path, source=source)
