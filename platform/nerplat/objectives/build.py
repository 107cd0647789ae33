"""Build an objective from the name and parameters a spec gives, reporting bad parameters as user errors."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from nerplat.errors import Problem, UserInputError
from nerplat.objectives.base import Objective, ObjectiveContext
from nerplat.objectives.registry import OBJECTIVES


def build_objective(name: str, params: dict[str, Any], context: ObjectiveContext) -> Objective:
    """The registered objective ``name`` with ``params`` validated by its config model."""
    entry = OBJECTIVES.get(name)
    try:
        config = entry.config.model_validate(params)
    except ValidationError as error:
        raise UserInputError(
            [Problem(e["msg"], path=".".join(str(p) for p in e["loc"]) or None) for e in error.errors()]
        ) from None
    return entry.factory(config, context)
