"""The catalog of real entries: every registry a spec can name, filled by importing the modules that register.

Importing this module imports the entry modules (and so torch, for models and objectives): the
commands import it inside the commands that need a catalog, and the spec and plan layers receive a
`nerplat.registry.Catalog` as an argument instead, so they stay free of model code. Like the CLI,
this module may import every layer. `spec_catalog` adds the user's code: installed plugin entry
points and the plugins a spec names.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from nerplat.data.corpora import CORPORA
from nerplat.data.formats import FORMATS
from nerplat.data.samplers import SAMPLERS
from nerplat.models.encoder_registry import ENCODERS
from nerplat.models.heads import HEADS
from nerplat.objectives import OBJECTIVES
from nerplat.plugins import PLUGINS_KEY, load_entry_points, load_spec_plugins
from nerplat.registry import Catalog
from nerplat.run.search import SCHEDULERS, SEARCHERS
from nerplat.spec.loader import read_document


@cache
def default_catalog() -> Catalog:
    catalog = Catalog(CORPORA, SAMPLERS, ENCODERS, HEADS, OBJECTIVES, SEARCHERS, SCHEDULERS, FORMATS)
    load_entry_points()  # after the built-ins, so a plugin that reuses a built-in name is refused
    return catalog


def spec_catalog(spec: str | Path) -> Catalog:
    """The default catalog plus the plugins `spec` names under `plugins:` (raises UserInputError, located)."""
    catalog = default_catalog()
    document, _ = read_document(spec)  # its other problems are reported by validation
    names = document.data.get(PLUGINS_KEY) if isinstance(document.data, dict) else None
    if names is None:
        return catalog
    if not isinstance(names, list):
        names = [names]
    load_spec_plugins(names, Path(spec).parent, lambda message, index: document.problem(message, (PLUGINS_KEY, index)))
    return catalog
