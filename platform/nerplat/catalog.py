"""Every registry a spec can name, gathered in one place for validation, `nerplat registry` and runs.

Importing this pulls in the entry modules (and so torch, for models and objectives); the spec layer
receives the catalog as an argument instead of importing it, so it stays free of model code.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from nerplat.registry import Registry


@dataclass(frozen=True)
class Catalog:
    corpora: Registry
    samplers: Registry
    encoders: Registry
    heads: Registry
    objectives: Registry
    searchers: Registry
    schedulers: Registry

    def registries(self) -> dict[str, Registry]:
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


@cache
def default_catalog() -> Catalog:
    from nerplat.data.corpora import CORPORA
    from nerplat.data.samplers import SAMPLERS
    from nerplat.models.encoders import ENCODERS
    from nerplat.models.heads import HEADS
    from nerplat.objectives import OBJECTIVES
    from nerplat.run.search import SCHEDULERS, SEARCHERS

    return Catalog(CORPORA, SAMPLERS, ENCODERS, HEADS, OBJECTIVES, SEARCHERS, SCHEDULERS)
