"""The base of every shared config type: unknown keys are errors, instances are immutable and hashable."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
