"""Registries for everything a spec names: corpora, samplers, encoders, heads, objectives, searchers.

An entry is a pydantic config model (what the spec may say about it) plus a factory (what builds it).
Unknown names fail with the registered alternatives and a did-you-mean suggestion.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any, Callable, Generic, TypeVar

from pydantic import BaseModel, ConfigDict

from nerplat.errors import UserInputError

F = TypeVar("F", bound=Callable[..., Any])


class EmptyConfig(BaseModel):
    """Config of an entry that takes no parameters."""

    model_config = ConfigDict(extra="forbid")


@dataclass(frozen=True)
class Entry(Generic[F]):
    name: str
    config: type[BaseModel]
    factory: F
    summary: str  # first line of the factory's docstring, shown by `nerplat registry`


class Registry(Generic[F]):
    """Names used in specs, mapped to a config model and a factory."""

    def __init__(self, kind: str):
        self.kind = kind
        self._entries: dict[str, Entry[F]] = {}

    def register(self, name: str, config: type[BaseModel] = EmptyConfig) -> Callable[[F], F]:
        def decorate(factory: F) -> F:
            if name in self._entries:
                raise ValueError(f"{self.kind} '{name}' is already registered")
            doc = (factory.__doc__ or "").strip().splitlines()
            self._entries[name] = Entry(name, config, factory, doc[0] if doc else "")
            return factory

        return decorate

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def names(self) -> list[str]:
        return sorted(self._entries)

    def entries(self) -> list[Entry[F]]:
        return [self._entries[n] for n in self.names()]

    def unknown_message(self, name: str) -> str:
        """'unknown loss 'mmo'; did you mean 'mom'? (registered: ce, mom, ...)'"""
        message = f"unknown {self.kind} '{name}'"
        # Case-insensitive, so the papers' spelling (sCR) finds the registered one (scr).
        by_lower = {n.lower(): n for n in self.names()}
        close = difflib.get_close_matches(str(name).lower(), list(by_lower), n=1, cutoff=0.6)
        if close:
            message += f"; did you mean '{by_lower[close[0]]}'?"
        return f"{message} (registered: {', '.join(self.names()) or 'none'})"

    def get(self, name: str) -> Entry[F]:
        try:
            return self._entries[name]
        except KeyError:
            raise UserInputError(self.unknown_message(name)) from None


@dataclass(frozen=True)
class Catalog:
    """Every registry a spec can name; `nerplat.catalog.default_catalog()` fills it with the real entries.

    Layers that validate or compile specs take a catalog as an argument, so they import only this
    type and never the modules that register torch models, losses or Ray searchers.
    """

    corpora: Registry
    samplers: Registry
    encoders: Registry
    heads: Registry
    objectives: Registry
    searchers: Registry
    schedulers: Registry

    def registries(self) -> dict[str, Registry]:
        return {name: getattr(self, name) for name in self.__dataclass_fields__}
