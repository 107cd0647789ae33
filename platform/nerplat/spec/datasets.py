"""Datasets of a spec resolved to `DatasetRef`s with the labels arm ids use.

A name must be registered (`nerplat registry` lists the corpora) or be `hf:<hub id>`; a path is a
folder, relative to the spec's own folder unless absolute. Labels: the name with '/' written '--'
(`hf:org--corpus`), or the folder's name.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from nerplat.config.trial import DatasetRef
from nerplat.errors import Problem
from nerplat.registry import Catalog
from nerplat.spec.loader import Document, YamlPath, format_path
from nerplat.spec.schema import HUB_PREFIX, DatasetSection

DatasetCheck = Callable[[DatasetRef], list[str]]  # deeper checks by the data layer: messages, [] when fine


@dataclass(frozen=True)
class NamedDataset:
    label: str
    ref: DatasetRef
    at: YamlPath


def resolve_datasets(
    document: Document,
    entries: list[tuple[DatasetSection, YamlPath]],
    catalog: Catalog,
    spec_folder: Path,
    check: DatasetCheck | None = None,
) -> tuple[list[NamedDataset], list[Problem]]:
    problems: list[Problem] = []
    resolved: list[NamedDataset] = []
    seen: dict[str, YamlPath] = {}
    for section, at in entries:
        name_at = at if _written_as_name(document, at) else at + ("name",)
        if section.name is not None:
            label = section.name.replace("/", "--")
            if not section.name.startswith(HUB_PREFIX) and section.name not in catalog.corpora:
                message = catalog.corpora.unknown_message(section.name) + f"; or write {HUB_PREFIX}<hub id> or a path"
                problems.append(document.problem(message, name_at))
                continue
            path = None
        else:
            folder = Path(section.path).expanduser()
            folder = folder if folder.is_absolute() else (spec_folder / folder)
            if not folder.is_dir():
                problems.append(document.problem(f"no corpus folder at {folder}", at + ("path",)))
                continue
            label, path = folder.resolve().name, str(folder.resolve())
        ref = DatasetRef(name=section.name, path=path, iob1=section.iob1, dev_from_train=section.dev_from_train)
        if check is not None:
            deeper = check(ref)
            problems += [document.problem(message, at) for message in deeper]
            if deeper:
                continue
        if label in seen:
            problems.append(document.problem(f"dataset '{label}' is given twice (also at {format_path(seen[label])})", at))
            continue
        seen[label] = at
        resolved.append(NamedDataset(label, ref, at))
    return resolved, problems


def _written_as_name(document: Document, at: YamlPath) -> bool:
    value = document.data
    for part in at:
        value = value[part]
    return isinstance(value, str)
