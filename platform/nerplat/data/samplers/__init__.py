"""Samplers reshape the training split (and, for label maps, every split); one module per sampler family.

Importing the package registers every sampler in ``SAMPLERS``.
"""

from nerplat.data.samplers.registry import SAMPLERS, Sampler, SamplerConfig
from nerplat.data.samplers import (  # noqa: F401  (registration on import)
    augmentation,
    balanced_undersampling,
    entity_ratio,
    fraction,
    label_maps,
    low_resource,
    matched_steps,
    resampling,
)
from nerplat.data.samplers.chain import apply_samplers
from nerplat.data.corpus_stats import entity_token_share, size_factor

__all__ = ["SAMPLERS", "Sampler", "SamplerConfig", "apply_samplers", "entity_token_share", "size_factor"]
