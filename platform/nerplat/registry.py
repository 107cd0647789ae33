"""Registries for everything a spec names: corpora, samplers, encoders, heads, objectives, searchers.

An entry is a pydantic config model (what the spec may say about it) plus a factory (what builds it).
`Registry.build(name, params, **context)` is the one way to get a built thing: it validates `params`
by the entry's config model and calls ``factory(config, **context)``. Unknown names fail with the
registered alternatives and a did-you-mean suggestion; bad parameters fail with every problem located.
An entry also carries what its contract tests and other consumers need (`examples`, `traits`), so
adding one is its module, its test and its registration, with no central list to edit.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Callable, Generic, TypeVar

from pydantic import BaseModel, ConfigDict

from nerplat.errors import Problem, UserInputError
from nerplat.suggest import unknown_name
from nerplat.validation import validated

F = TypeVar("F", bound=Callable[..., Any])
BUILT_IN = "built-in"
_origin: ContextVar[str] = ContextVar("registration_origin", default=BUILT_IN)
_registered: ContextVar[list[str] | None] = ContextVar("registered_entries", default=None)


@contextmanager
def registering_from(origin: str) -> Iterator[list[str]]:
    """Entries registered inside this block record `origin` (a plugin file or entry point) as where they
    come from; the block gets the list of what it registered ("loss 'my_loss'"), which tells a plugin
    that registers nothing (a misnamed module) from one that does."""
    origin_token, registered_token = _origin.set(origin), _registered.set([])
    try:
        yield _registered.get()
    finally:
        _origin.reset(origin_token)
        _registered.reset(registered_token)


class EmptyConfig(BaseModel):
    """Config of an entry that takes no parameters."""

    model_config = ConfigDict(extra="forbid")


@dataclass(frozen=True)
class Entry(Generic[F]):
    name: str
    config: type[BaseModel]
    factory: F
    summary: str  # first line of the factory's docstring, shown by `nerplat registry`
    origin: str = BUILT_IN  # or the plugin that registered it, shown by `nerplat registry`
    examples: tuple[Mapping[str, Any], ...] = ({},)  # parameters the kind's contract tests build it with
    traits: Any = None  # what one kind's consumers read beyond config and factory (a head's `HeadServing`)


class Registry(Generic[F]):
    """Names used in specs, mapped to a config model and a factory."""

    def __init__(self, kind: str):
        self.kind = kind
        self._entries: dict[str, Entry[F]] = {}

    def register(
        self,
        name: str,
        config: type[BaseModel] = EmptyConfig,
        summary: str | None = None,
        *,
        examples: tuple[Mapping[str, Any], ...] = ({},),
        traits: Any = None,
    ) -> Callable[[F], F]:
        """Registers a factory under `name`; `summary` defaults to the first line of its docstring.

        `examples` are parameter sets the kind's contract tests build the entry with (by default its
        defaults alone); `traits` is what that kind's consumers read of it (see `Entry`).
        """

        def decorate(factory: F) -> F:
            if name in self._entries:
                raise ValueError(f"{self.kind} '{name}' is already registered ({self._entries[name].origin})")
            doc = (factory.__doc__ or "").strip().splitlines()
            text = summary if summary is not None else doc[0] if doc else ""
            self._entries[name] = Entry(name, config, factory, text, _origin.get(), tuple(examples), traits)
            if (registered := _registered.get()) is not None:
                registered.append(f"{self.kind} '{name}'")
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
        return unknown_name(self.kind, name, self.names(), listed_as="registered")

    def get(self, name: str, at: str = "") -> Entry[F]:
        """The entry `name`; an unknown name raises a problem located at `at`."""
        try:
            return self._entries[name]
        except KeyError:
            raise UserInputError(Problem(self.unknown_message(name), path=at or None)) from None

    def config(self, name: str, params: Mapping[str, Any], at: str = "") -> BaseModel:
        """`params` validated by the config model of `name`; every bad parameter is reported, at `at.key`."""
        return validated(self.get(name, at).config, dict(params), at=at, what=f"{self.kind} '{name}'")

    def build(self, name: str, params: Mapping[str, Any], *, at: str = "", **context: Any) -> Any:
        """``factory(config, **context)`` of the entry `name`, with `params` validated first (see `config`)."""
        return self.get(name, at).factory(self.config(name, params, at), **context)


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
    formats: Registry | None = None  # corpus formats (conll, jsonl_tokens, ...)

    def registries(self) -> dict[str, Registry]:
        found = {name: getattr(self, name) for name in self.__dataclass_fields__}
        return {name: registry for name, registry in found.items() if registry is not None}
