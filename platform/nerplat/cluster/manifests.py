"""Kubernetes objects read from YAML, remembering where each came from so errors can name a line.

Every render reads the same overlay files again (`kustomize.build`), so a text is parsed once per
process, by libyaml when PyYAML has it, and each caller gets a fresh copy to change. Bad input is
parsed again by PyYAML's own parser, so its messages stay the ones users (and tests) know.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import yaml

from nerplat.errors import Problem, UserInputError

PathSegment = str | int
T = TypeVar("T")
FAST_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's parser, when PyYAML was built with it
PARSED_TEXTS = 256  # distinct texts kept parsed: the overlays under cluster/ are a few dozen files


@dataclass(frozen=True)
class Manifest:
    """One Kubernetes object.

    `node` is the YAML node the object was read from (None for objects built in code); it maps a
    path inside the object back to a line of `source`.
    """

    body: dict[str, Any]
    source: str | None = None
    node: yaml.Node | None = None

    @property
    def kind(self) -> str:
        return str(self.body.get("kind", "?"))

    @property
    def name(self) -> str:
        metadata = self.body.get("metadata")
        return str(metadata.get("name", "?")) if isinstance(metadata, dict) else "?"

    @property
    def label(self) -> str:
        return f"{self.kind} '{self.name}'"

    def line_of(self, path: Sequence[PathSegment], *, key: bool = False) -> int | None:
        """1-based line of the value at `path` (of its key when `key`), or of its nearest ancestor."""
        node, line = self.node, None
        if node is None:
            return None
        line = node.start_mark.line + 1
        for segment in path:
            if isinstance(node, yaml.MappingNode):
                match = next((pair for pair in node.value if pair[0].value == segment), None)
                if match is None:
                    return line
                key_node, node = match
                # A block mapping or list starts on the line after its key: point at the key.
                on_key = key or not isinstance(node, yaml.ScalarNode)
                line = (key_node if on_key else node).start_mark.line + 1
            elif isinstance(node, yaml.SequenceNode) and isinstance(segment, int) and segment < len(node.value):
                node = node.value[segment]
                line = node.start_mark.line + 1
            else:
                return line
        return line

    def problem(self, message: str, path: Sequence[PathSegment] = (), *, key: bool = False) -> Problem:
        return Problem(
            f"{self.label}: {message}",
            source=self.source,
            line=self.line_of(path, key=key),
            path=format_path(path) or None,
        )


def format_path(path: Iterable[PathSegment]) -> str:
    """`("spec", "workerGroupSpecs", 0, "maxReplicas")` -> `spec.workerGroupSpecs[0].maxReplicas`."""
    text = ""
    for segment in path:
        text += f"[{segment}]" if isinstance(segment, int) else (f".{segment}" if text else str(segment))
    return text


def parse_manifests(text: str, source: str | None) -> list[Manifest]:
    """Every non-empty document of a (multi-document) YAML text; each must be a mapping."""
    return [Manifest(copy.deepcopy(m.body), m.source, m.node) for m in _parsed_manifests(text, source)]


def parse_yaml(text: str, source: str | None) -> Any:
    """One YAML document as plain data (`yaml.safe_load`), parsed once per process; a fresh copy.
    Bad YAML is a `UserInputError` naming `source` and the line."""
    return copy.deepcopy(_parsed_yaml(text, source))


@functools.lru_cache(maxsize=PARSED_TEXTS)
def _parsed_manifests(text: str, source: str | None) -> tuple[Manifest, ...]:
    return _parsed(lambda loader: _compose_manifests(text, source, loader), source)


@functools.lru_cache(maxsize=PARSED_TEXTS)
def _parsed_yaml(text: str, source: str | None) -> Any:
    return _parsed(lambda loader: yaml.load(text, Loader=loader), source)


def _parsed(parse: Callable[[type], T], source: str | None) -> T:
    """`parse` by libyaml, and again by PyYAML's own parser when libyaml refuses the text: its
    messages are the ones users know, raised as a `UserInputError` naming the file and line."""
    try:
        return parse(FAST_LOADER)
    except yaml.YAMLError:
        pass
    try:
        return parse(yaml.SafeLoader)
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        raise UserInputError(
            Problem(f"not valid YAML: {error.problem or error}", source=source, line=mark.line + 1 if mark else None)
        ) from error


def _compose_manifests(text: str, source: str | None, loader_class: type) -> tuple[Manifest, ...]:
    loader = loader_class(text)
    manifests = []
    try:
        while loader.check_node():
            node = loader.get_node()
            body = loader.construct_document(node)
            if body is None:
                continue
            if not isinstance(body, dict):
                raise UserInputError(
                    Problem("a Kubernetes manifest must be a mapping", source=source, line=node.start_mark.line + 1)
                )
            manifests.append(Manifest(body, source, node))
    finally:
        loader.dispose()
    return tuple(manifests)


def load_manifests(path: Path) -> list[Manifest]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise UserInputError(Problem(f"cannot read manifest: {error.strerror}", source=str(path))) from error
    return parse_manifests(text, str(path))


def dump_manifests(bodies: Iterable[dict[str, Any]]) -> str:
    return yaml.safe_dump_all(list(bodies), sort_keys=False, default_flow_style=False)


