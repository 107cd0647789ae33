"""Build an objective from the name and parameters a spec gives (the trial's one call into the registry)."""

from __future__ import annotations

from typing import Any

from nerplat.objectives.base import Objective, ObjectiveContext
from nerplat.objectives.registry import OBJECTIVES


def build_objective(name: str, params: dict[str, Any], context: ObjectiveContext) -> Objective:
    """The registered objective ``name`` with ``params`` validated by its config; problems located at ``objective.<key>``."""
    return OBJECTIVES.build(name, params, at="objective", context=context)
