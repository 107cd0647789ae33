"""Datasets of a spec resolved to `DatasetRef`s with the labels arm ids use.

A name must be registered (`nerplat registry` lists the corpora) or be `hf:<hub id>`; a path,
relative to the spec's own folder unless absolute, is a folder whose files are in a registered
format (`conll` unless `format:` says otherwise), or one file given with the `split` that draws its
dev and test splits (its format, unless written, from the file: `data.formats.format_of_file`).
Labels: the name with '/' written '--' (`hf:org--corpus`), or the folder's name (a file's without
its suffix), with what a run key cannot hold written as `%XX` (`o'brien` -> `o%27brien`,
`nerplat.run_keys.key_text`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from nerplat.config.trial import Component, DatasetRef
from nerplat.data.corpora import single_file_message
from nerplat.data.formats import format_of_file
from nerplat.errors import Problem
from nerplat.registry import Catalog
from nerplat.spec.loader import Document, YamlPath, format_path
from nerplat.spec.params import check_params
from nerplat.spec.schema import HUB_PREFIX, SAVED_FOLDER_PREFIXES, DatasetSection
from nerplat.run_keys import key_text

DatasetCheck = Callable[[DatasetRef], list[str]]  # deeper checks by the data layer: messages, [] when fine


@dataclass(frozen=True)
class NamedDataset:
    label: str
    ref: DatasetRef
    at: YamlPath


def resolve_datasets(
    document: Document, entries: list[tuple[DatasetSection, YamlPath]], catalog: Catalog, spec_folder: Path,
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
                written = Path(section.name).expanduser()
                if (written if written.is_absolute() else spec_folder / written).is_file():
                    message += "; " + _single_file_message(spec_folder / written, section.format.name)
                problems.append(document.problem(message, name_at))
                continue
            path = None
            saved = _saved_hub_folder(section, spec_folder)
            if saved is not section:
                folder = Path(saved.name[len(HUB_PREFIX) :])
                if not (folder / SAVED_DATASET_MARKER).is_file():  # never hand load_from_disk an arbitrary folder
                    message = (
                        f"{folder} is not a dataset saved with save_to_disk (no {SAVED_DATASET_MARKER}): "
                        "save a DatasetDict there"
                    )
                    problems.append(document.problem(message, name_at))
                    continue
                section, label = saved, HUB_PREFIX + key_text(folder.name)
        else:
            local = _local_corpus(document, section, at, spec_folder)
            if isinstance(local, Problem):
                problems.append(local)
                continue
            section, label, path = local
        data_format, found = _resolve_format(document, section, at, catalog)
        if found:
            problems += found
            continue
        ref = DatasetRef(
            name=section.name, path=path, format=data_format, iob1=section.iob1, dev_from_train=section.dev_from_train,
            split=section.split,
        )
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


def _local_corpus(
    document: Document, section: DatasetSection, at: YamlPath, spec_folder: Path
) -> tuple[DatasetSection, str, str] | Problem:
    """A dataset given by `path` (relative to the spec's folder unless absolute): the section with a
    single file's format filled in where `format:` is not written, its label and its absolute path;
    or the problem with the path."""
    folder = Path(section.path).expanduser()
    folder = folder if folder.is_absolute() else (spec_folder / folder)
    if folder.is_file() and section.split is None:
        return document.problem(_single_file_message(folder, section.format.name), at + ("path",))
    if not folder.exists():
        return document.problem(f"no corpus folder or file at {folder}", at + ("path",))
    if folder.is_file() and _value_at(document, at + ("format",)) is None:
        section = section.model_copy(update={"format": type(section.format).model_validate(format_of_file(folder))})
    label = key_text(folder.resolve().stem if folder.is_file() else folder.resolve().name)
    return section, label, str(folder.resolve())


SAVED_DATASET_MARKER = "dataset_dict.json"  # what DatasetDict.save_to_disk writes at the folder's top


def _saved_hub_folder(section: DatasetSection, spec_folder: Path) -> DatasetSection:
    """`hf:./folder` (a dataset saved to disk) made absolute, relative to the spec's folder like dataset paths."""
    rest = section.name[len(HUB_PREFIX) :] if section.name.startswith(HUB_PREFIX) else ""
    if not rest.startswith(SAVED_FOLDER_PREFIXES):
        return section
    return section.model_copy(update={"name": HUB_PREFIX + str((spec_folder / Path(rest).expanduser()).resolve())})


def _single_file_message(path: Path, data_format: str) -> str:
    return single_file_message(path, data_format)


def _resolve_format(
    document: Document, section: DatasetSection, at: YamlPath, catalog: Catalog
) -> tuple[Component, list[Problem]]:
    """The dataset's format with its options validated by the format's config model."""
    name, raw = section.format.name, section.format.params
    where = at + ("format",)
    if catalog.formats is None:
        return Component(name=name, params=raw), []
    if name not in catalog.formats:
        return Component(name=name), [document.problem(catalog.formats.unknown_message(name), where)]
    params_at = where + (name,) if isinstance(_value_at(document, where), dict) else where
    checked = check_params(document, catalog.formats.get(name).config, raw, params_at, f"format '{name}'")
    return Component(name=name, params=checked.values), checked.problems


def _value_at(document: Document, at: YamlPath) -> object:
    value = document.data
    for part in at:
        if not isinstance(value, (dict, list)):
            return None
        try:
            value = value[part]
        except (KeyError, IndexError, TypeError):
            return None
    return value


def _written_as_name(document: Document, at: YamlPath) -> bool:
    value = document.data
    for part in at:
        value = value[part]
    return isinstance(value, str)
