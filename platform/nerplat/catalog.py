"""The catalog of real entries: every registry a spec can name, filled by importing the modules that register.

Importing `default_catalog`'s registries pulls in the entry modules (and so torch, for models and
objectives); the spec and plan layers receive a `nerplat.registry.Catalog` as an argument instead,
so they stay free of model code. Like the CLI, this module may import every layer.
"""

from __future__ import annotations

from functools import cache

from nerplat.registry import Catalog


@cache
def default_catalog() -> Catalog:
    from nerplat.data.corpora import CORPORA
    from nerplat.data.samplers import SAMPLERS
    from nerplat.models.encoders import ENCODERS
    from nerplat.models.heads import HEADS
    from nerplat.objectives import OBJECTIVES
    from nerplat.run.search import SCHEDULERS, SEARCHERS

    return Catalog(CORPORA, SAMPLERS, ENCODERS, HEADS, OBJECTIVES, SEARCHERS, SCHEDULERS)
