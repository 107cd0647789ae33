"""Heads: one module per head, registered under the name specs use."""

from nerplat.models.heads.registry import HEADS

__all__ = ["HEADS"]
