"""Reads a spec file into plain data plus the line of every mapping key and sequence item.

PyYAML's safe loader silently keeps the last of two equal keys and forgets where values came from;
this loader walks the composed node tree itself, so every value is located (for error messages
like "methods.mom.loss (specs/x.yaml:12)"), duplicate keys are reported with both lines, and
`${VAR}` references are interpolated in scalars (see `nerplat.spec.interpolation`).
Keys are always their source text: `on:` is the string "on", not YAML 1.1's boolean.

A spec is small, so hostile files are refused before they cost anything: the text is bounded
(`MAX_SPEC_BYTES`), and so are nesting (`MAX_DEPTH`) and the values built, aliases expanded
(`MAX_VALUES`: a "billion laughs" file of a few lines would otherwise expand to gigabytes).
A UTF-8 byte-order mark is dropped, not read into the first key. Control characters are refused
whether written raw or as a double-quoted escape (`"\\0"`, `"\\e"`). A value given on the command
line (`--set`, `parse_value`) passes the same bounds and checks.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from nerplat.errors import Problem, UserInputError
from nerplat.spec.interpolation import InterpolationError, interpolate, needs_interpolation, referenced_names

YamlPath = tuple[str | int, ...]

_MERGE_TAG = "tag:yaml.org,2002:merge"
# Tags a spec may carry (most are implicit); `!!python/...`, `!!binary` and custom tags are refused.
_PLAIN_TAGS = frozenset(
    f"tag:yaml.org,2002:{kind}" for kind in ("str", "int", "float", "bool", "null", "timestamp", "seq", "map", "merge")
)
MAX_SPEC_BYTES = 1_000_000  # the largest spec in specs/ is under 5 kB
MAX_DEPTH = 50  # mappings and lists inside each other; specs nest about 6 deep
MAX_VALUES = 100_000  # values built, aliases expanded
_PLAIN_KEY = re.compile(r"[A-Za-z0-9_\-:+@]+")


def format_path(path: YamlPath) -> str:
    """('samplers', 1, 'low_resource', 'size') -> 'samplers[1].low_resource.size'."""
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        elif _PLAIN_KEY.fullmatch(part):
            text += f".{part}" if text else part
        else:
            text += f"[{part!r}]"
    return text


@dataclass(frozen=True)
class Location:
    """Where a value is written: its line and its path in the file.

    The path differs from the value's place in the document when a profile supplied it
    (`train.epochs` written at `profiles.cpu.train.epochs`).
    """

    line: int
    path: YamlPath


@dataclass(frozen=True)
class Interpolation:
    """A scalar written with `${...}` references: its text as written and the variables it names."""

    text: str
    names: tuple[str, ...]


@dataclass(frozen=True)
class Document:
    """Plain YAML data (dicts, lists, scalars) and the location of every key and item in it."""

    source: str
    data: Any
    locations: Mapping[YamlPath, Location] = field(default_factory=dict)
    unresolved: frozenset[YamlPath] = frozenset()  # values already reported: unset `${VAR}`, refused tags
    interpolated: Mapping[YamlPath, Interpolation] = field(default_factory=dict)  # by path as written
    environment_values: Mapping[str, str] = field(default_factory=dict)  # variables substituted -> their text

    def locate(self, path: YamlPath) -> tuple[int | None, YamlPath]:
        """Line and file path of `path`, or of its nearest located ancestor when it is missing."""
        for cut in range(len(path), -1, -1):
            found = self.locations.get(path[:cut])
            if found is not None:
                return found.line, found.path + path[cut:]
        return None, path

    def problem(self, message: str, path: YamlPath) -> Problem:
        line, written_at = self.locate(path)
        return Problem(message, source=self.source, line=line, path=format_path(written_at) or None)


def read_document(source: str | Path, environ: Mapping[str, str] | None = None) -> tuple[Document, list[Problem]]:
    """Reads and parses a spec file.

    Returns the document and the problems found on the way (duplicate keys, unresolved `${VAR}`);
    the caller reports them together with the schema's. Unreadable files and YAML syntax errors
    raise `UserInputError` at once: nothing sensible can be checked after them.
    """
    name = str(source)
    try:
        with Path(source).open("rb") as stream:
            data = stream.read(MAX_SPEC_BYTES + 1)
        text = data.decode("utf-8-sig")
    except OSError as error:
        reason = error.strerror or str(error)
        raise UserInputError(Problem(f"cannot read the spec: {reason}", source=name)) from None
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise UserInputError(Problem("the spec is not UTF-8 text: save it as UTF-8", source=name, line=line)) from None
    if len(data) > MAX_SPEC_BYTES:
        message = f"the spec is larger than {MAX_SPEC_BYTES:,} bytes: a spec is a few kB of settings, not data"
        raise UserInputError(Problem(message, source=name))
    return parse_document(text, name, os.environ if environ is None else environ)


def parse_document(text: str, source: str, environ: Mapping[str, str]) -> tuple[Document, list[Problem]]:
    """Parses YAML text; see `read_document`."""
    text = text.removeprefix("\ufeff")
    node, loader = _compose(text, source)
    if node is None:
        raise UserInputError(Problem("the spec is empty", source=source, line=1))
    walker = _Walker(loader, environ)
    try:
        data = walker.build(node, ())
    except _TooLarge as error:
        raise UserInputError(Problem(str(error), source=source, line=error.line)) from None
    document = Document(
        source, data, walker.locations, frozenset(walker.unresolved), walker.interpolated, walker.environment_values
    )
    return document, [document.problem(message, path) for message, path in walker.problems]


def parse_value(text: str, source: str, at: YamlPath) -> tuple[Any, list[Problem]]:
    """A YAML value given outside a spec file (a `--set` flag, named by `source`), to be set at `at`.

    The bounds and checks of a spec file apply (size, nesting counted from the spec's top, aliases
    expanded, tags, control characters); `${VAR}` stays as written, since a shell has already
    expanded the command line. Returns the value (None for an empty one) and its problems, located
    at `source` and a path under `at`; a value that cannot be read at all raises `UserInputError`.
    """
    where = format_path(at) or None
    if len(text.encode("utf-8", "surrogatepass")) > MAX_SPEC_BYTES:
        message = f"the value is larger than {MAX_SPEC_BYTES:,} bytes: a spec is a few kB of settings, not data"
        raise UserInputError(Problem(message, source=source, path=where))
    try:
        node, loader = _compose(text, source, what="the value")
    except UserInputError as error:  # a line of a one-line flag says nothing
        raise UserInputError([replace(p, line=None, path=where) for p in error.problems]) from None
    if node is None:
        return None, []
    walker = _Walker(loader, environ=None, what="the value")
    try:
        value = walker.build(node, at)
    except _TooLarge as error:
        raise UserInputError(Problem(str(error), source=source, path=where)) from None
    return value, [Problem(message, source=source, path=format_path(path) or None) for message, path in walker.problems]


def _compose(text: str, source: str, what: str = "the spec") -> tuple[Node | None, yaml.SafeLoader]:
    """The node tree of `text` (aliases not expanded; None when it holds no value), or a
    `UserInputError` naming the line. `what` names the text in messages."""
    loader = None
    try:
        loader = yaml.SafeLoader(text)  # its reader already refuses NUL and other control characters
        node = loader.get_single_node()
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        message = f"invalid YAML: {error.problem or error.context}"
        if mark is not None and "got '{'" in message and "${" in text.splitlines()[mark.line]:
            message += (
                ": inside a flow mapping or list ({...}, [...]) YAML reads the braces of an unquoted ${VAR} as its own; "
                "quote the value, e.g. {path: '${HOME}/corpus'}"
            )
        raise UserInputError(Problem(message, source=source, line=mark.line + 1 if mark else None)) from None
    except yaml.reader.ReaderError as error:
        line = text.count("\n", 0, error.position) + 1
        message = f"invalid YAML: character #x{error.character:04x} is not allowed in YAML text: remove it"
        raise UserInputError(Problem(message, source=source, line=line)) from None
    except yaml.YAMLError as error:
        raise UserInputError(Problem(f"invalid YAML: {error}", source=source)) from None
    except RecursionError:
        message = f"{what} nests mappings or lists too deeply (more than {MAX_DEPTH} levels)"
        raise UserInputError(Problem(message, source=source)) from None
    finally:
        if loader is not None:
            loader.dispose()
    return node, loader


def _control_character(text: str) -> str | None:
    """'control character #x001b (written as an escape?)' for the first character YAML text may not
    hold raw, which a double-quoted escape (`"\\0"`, `"\\e"`) still makes; None when there is none."""
    found = yaml.reader.Reader.NON_PRINTABLE.search(text)
    return None if found is None else f"control character #x{ord(found.group()):04x} (written as an escape?)"


class _TooLarge(Exception):
    """The document nests too deeply or expands to too many values; nothing more is read."""

    def __init__(self, message: str, line: int):
        super().__init__(message)
        self.line = line


class _Walker:
    """Builds plain data from a node tree, recording locations and problems."""

    def __init__(self, loader: yaml.SafeLoader, environ: Mapping[str, str] | None, what: str = "the spec"):
        self.loader = loader
        self.environ = environ  # None: `${VAR}` is kept as written
        self.what = what  # names the text in messages
        self.locations: dict[YamlPath, Location] = {(): Location(1, ())}
        self.problems: list[tuple[str, YamlPath]] = []
        self.unresolved: list[YamlPath] = []
        self.interpolated: dict[YamlPath, Interpolation] = {}
        self.environment_values: dict[str, str] = {}
        self._active: set[int] = set()
        self._built = 0

    def build(self, node: Node, path: YamlPath) -> Any:
        self._built += 1
        line = node.start_mark.line + 1
        if self._built > MAX_VALUES:
            message = (
                f"{self.what} expands to more than {MAX_VALUES:,} values (YAML aliases repeating aliases?): "
                "write it out plainly"
            )
            raise _TooLarge(message, line)
        if len(path) > MAX_DEPTH:
            raise _TooLarge(f"{self.what} nests mappings or lists more than {MAX_DEPTH} levels deep", line)
        if id(node) in self._active:
            self.problems.append(("an alias refers to a value that contains it", path))
            return None
        if node.tag not in _PLAIN_TAGS:
            tag = node.tag.replace("tag:yaml.org,2002:", "!!")
            self.problems.append((f"YAML tag {tag} is not allowed in a spec: write a plain value", path))
            self.unresolved.append(path)  # reported here, not again by the schema
            return None
        self._active.add(id(node))
        try:
            if isinstance(node, MappingNode):
                return self._mapping(node, path)
            if isinstance(node, SequenceNode):
                return self._sequence(node, path)
            return self._scalar(node, path)
        finally:
            self._active.discard(id(node))

    def _locate(self, path: YamlPath, node: Node) -> None:
        self.locations[path] = Location(node.start_mark.line + 1, path)

    def _mapping(self, node: MappingNode, path: YamlPath) -> dict[str, Any]:
        result: dict[str, Any] = {}
        # YAML merge keys (`<<: *defaults`) first, so the mapping's own keys override them.
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE_TAG:
                sources = value_node.value if isinstance(value_node, SequenceNode) else [value_node]
                for source in sources:
                    if isinstance(source, MappingNode):
                        result.update(self._mapping(source, path))
                    else:
                        self.problems.append(("'<<' merges only mappings", path))
        first_line: dict[str, int] = {}
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE_TAG:
                continue
            if not isinstance(key_node, ScalarNode):
                self.problems.append(("mapping keys must be plain names, not lists or mappings", path))
                continue
            key = key_node.value
            control = _control_character(key)
            if control is not None:
                self.problems.append((f"the key holds {control}: remove it", path))
                continue
            if key in first_line:
                message = f"duplicate key '{key}' (first defined on line {first_line[key]})"
                self.problems.append((message, path + (key,)))
            first_line.setdefault(key, key_node.start_mark.line + 1)
            self._locate(path + (key,), key_node)
            result[key] = self.build(value_node, path + (key,))
        return result

    def _sequence(self, node: SequenceNode, path: YamlPath) -> list[Any]:
        items = []
        for index, item in enumerate(node.value):
            self._locate(path + (index,), item)
            items.append(self.build(item, path + (index,)))
        return items

    def _scalar(self, node: ScalarNode, path: YamlPath) -> Any:
        value = self.loader.construct_object(node, deep=True)
        control = _control_character(value) if isinstance(value, str) else None
        if control is not None:
            self.problems.append((f"the value holds {control}: remove it", path))
            self.unresolved.append(path)
            return None
        if self.environ is None or not (isinstance(value, str) and needs_interpolation(value)):
            return value
        try:
            text = interpolate(value, self.environ)
        except InterpolationError as error:
            self.problems.append((str(error), path))
            self.unresolved.append(path)
            return value
        names = referenced_names(value)
        self.interpolated[path] = Interpolation(value, names)
        self.environment_values.update((name, self.environ[name]) for name in names if self.environ.get(name))
        if node.style is not None:
            return text  # quoted and block scalars stay strings
        # A plain scalar takes the type its substituted text would have had: `${EPOCHS:-3}` is 3.
        tag = self.loader.resolve(ScalarNode, text, (True, False))
        try:
            return self.loader.construct_object(ScalarNode(tag, text, node.start_mark, node.end_mark), deep=True)
        except yaml.YAMLError:
            return text
