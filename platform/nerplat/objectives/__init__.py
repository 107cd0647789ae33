"""Training objectives: one module per method of ../shared/METHODS.md, registered under its spec name."""

from nerplat.objectives.registry import OBJECTIVES

__all__ = ["OBJECTIVES"]
