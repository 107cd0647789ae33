"""Samplers reshape the training split (and, for label maps, every split); one module per sampler."""

from nerplat.data.samplers.registry import SAMPLERS

__all__ = ["SAMPLERS"]
