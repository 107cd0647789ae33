"""Validates a spec file completely and returns it resolved against the registries.

Stages, each reporting every problem it finds: loading (YAML, duplicate keys, `${VAR}`), the
profile merge, the section schemas (each section alone, so one broken section does not hide the
others), the registry-backed parts (datasets, samplers, methods, tune), the corpora read when a
dataset check is given (a split the replicates need, what each sampler setting refuses of a corpus:
`spec/sampler_refusals.py`), then the cross-section rules. All problems are raised together in one
`UserInputError`, in file order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from nerplat.config.experiment import Tune
from nerplat.config.trial import DatasetRef, EncoderSettings
from nerplat.data.corpora import checked_corpus, corpus_problems, missing_split_file
from nerplat.errors import Problem, UserInputError
from nerplat.registry import Catalog
from nerplat.spec.datasets import DatasetCheck, NamedDataset, resolve_datasets
from nerplat.spec.loader import Document, YamlPath, format_path, read_document
from nerplat.spec.methods import ResolvedMethod, resolve_methods
from nerplat.spec.overrides import Override, apply_overrides, parse_overrides, relocate
from nerplat.spec.profiles import PROFILES_KEY, apply_profile, profile_names, profile_problems
from nerplat.spec.recording import mask_values, recorded_data, unrecorded_values
from nerplat.spec.rules import (
    check_analysis,
    check_claims,
    check_method_samplers,
    check_precision,
    check_run_count,
    check_sequential_seeds,
    check_tune,
    check_window,
    replicate_partitions,
    replicate_seeds,
)
from nerplat.spec.sampler_refusals import sampler_refusals
from nerplat.spec.samplers import SamplerSetting, expand_samplers
from nerplat.spec.schema import Spec, is_hub_id
from nerplat.suggest import unknown_name
from nerplat.spec.validation_errors import problems_from

EXTENSION_PREFIX = "x-"  # top-level keys for YAML anchors (`x-defaults: &defaults {...}`), otherwise ignored


@dataclass(frozen=True)
class ValidatedSpec:
    """A spec that passed every check, with its parts resolved against the registries."""

    source: str
    profile: str | None
    document: Document  # profile merged, `profiles` removed
    spec: Spec
    datasets: tuple[NamedDataset, ...]
    encoder: EncoderSettings
    samplers: tuple[SamplerSetting, ...]
    methods: tuple[ResolvedMethod, ...]
    tune: Tune | None
    seeds: dict[str, tuple[int, ...]]  # sampler setting label -> seeds each of its replicated partitions runs
    partitions: dict[str, tuple[int, ...]]  # sampler setting label -> partitions to replicate over

    def resolved_data(self) -> dict[str, Any]:
        """The spec as run: interpolated, profile merged, without profiles and `x-` keys."""
        return {k: v for k, v in self.document.data.items() if not k.startswith(EXTENSION_PREFIX)}

    def recorded_data(self) -> dict[str, Any]:
        """The spec as it may be recorded: `resolved_data` with `${VAR}` values written as references
        unless `tracking.record_env` lists their variables (`nerplat.spec.recording`)."""
        recorded = recorded_data(self.document, self.resolved_data(), self.spec.tracking.record_env)
        return mask_values(recorded, self.unrecorded_values())

    def unrecorded_values(self) -> dict[str, str]:
        """Text of variables that may not be recorded -> its `${VAR}` reference."""
        return unrecorded_values(self.document, self.spec.tracking.record_env)


def default_dataset_check() -> DatasetCheck:
    """The data layer's dataset check (files present, every split read), once per corpus.

    Profiles usually share the spec's corpora, so each is read once however many variants name it.
    """
    checked: dict[str, list[str]] = {}  # keyed by the ref's JSON: its format options are a dict

    def check(ref: DatasetRef) -> list[str]:
        key = ref.model_dump_json()
        if key not in checked:
            checked[key] = corpus_problems(ref)
        return checked[key]

    return check


@dataclass(frozen=True)
class SpecSource:
    """A spec file as one command reads it: the file, the profile merged over it, the environment its
    `${VAR}`s come from (the process's when None) and the `--set` overrides applied last. A bare path
    is the file as written: no profile, no overrides."""

    path: str | Path
    profile: str | None = None
    environ: Mapping[str, str] | None = None
    overrides: Sequence[str] = ()

    @classmethod
    def of(cls, source: SpecSource | str | Path) -> SpecSource:
        return source if isinstance(source, SpecSource) else cls(source)

    def read(self) -> tuple[Document, list[Problem], list[Override]]:
        """The document (before its profile), the problems reading it and its profiles found, and the overrides."""
        overrides = parse_overrides(self.overrides)
        document, problems = read_document(self.path, self.environ)
        return document, problems + profile_problems(document), overrides


def load_spec(source: SpecSource | str | Path, catalog: Catalog, dataset_check: DatasetCheck | None = None) -> ValidatedSpec:
    """Reads, merges the profile and then the `--set` overrides into, and validates a spec file;
    raises `UserInputError` with every problem."""
    source = SpecSource.of(source)
    document, problems, parsed = source.read()
    merged = apply_overrides(apply_profile(document, source.profile), parsed)
    try:
        validated, more = validate_document(merged, catalog, source.profile, Path(source.path).parent, dataset_check)
    finally:
        checked_corpus.cache_clear()  # the corpora read for the checks: a run's driver keeps none of them
    _raise_if_any(document, problems, more, parsed)
    assert validated is not None
    return validated


def validate_spec_file(
    source: SpecSource | str | Path, catalog: Catalog, dataset_check: DatasetCheck | None = None
) -> list[ValidatedSpec]:
    """Validates the spec as written and, without a profile, merged with each of its profiles
    (each with the `--set` overrides applied last).

    Returns one `ValidatedSpec` per variant checked; raises one `UserInputError` for all of them.
    """
    source = SpecSource.of(source)
    document, problems, parsed = source.read()
    variants = [source.profile] if source.profile is not None else [None, *profile_names(document)]
    results, found = [], []
    for name in variants:
        try:
            merged = apply_overrides(apply_profile(document, name), parsed)
        except UserInputError as error:
            found += error.problems
            continue
        validated, more = validate_document(merged, catalog, name, Path(source.path).parent, dataset_check)
        found += more
        if validated is not None:
            results.append(validated)
    checked_corpus.cache_clear()  # the corpora read for the checks, kept while the variants shared them
    _raise_if_any(document, problems, found, parsed)
    return results


def _raise_if_any(document: Document, loading: list[Problem], later: list[Problem], overrides: Sequence[Override] = ()) -> None:
    """Raises all problems, dropping later ones about values whose `${VAR}` was not resolved."""
    unresolved = [format_path(path) for path in document.unresolved]
    later = [p for p in later if not any(_under(p.path, path) for path in unresolved)]
    problems = list(dict.fromkeys(loading + relocate(later, overrides)))  # variants repeat the base's problems
    if problems:
        problems.sort(key=lambda p: (p.line is None, p.line or 0))
        raise UserInputError(problems)


def _under(path: str | None, parent: str) -> bool:
    return path is not None and (path == parent or path.startswith((parent + ".", parent + "[")))


def validate_document(
    document: Document, catalog: Catalog, profile: str | None, spec_folder: Path, dataset_check: DatasetCheck | None = None
) -> tuple[ValidatedSpec | None, list[Problem]]:
    """Validates a (profile-merged) document; returns the resolved spec or the problems found."""
    data = document.data
    if not isinstance(data, dict):
        return None, [
            document.problem("a spec is a mapping of sections: experiment, dataset, model, train, samplers, methods, ...", ())
        ]
    sections, problems = _validate_sections(document, data)

    datasets, unresolved = _section_datasets(document, sections, catalog, spec_folder, dataset_check)
    problems += unresolved + _tuned_and_reported_on_dev(document, sections)

    encoder = None
    if "model" in sections:
        encoder, found = _model_encoder(document, sections["model"], catalog, spec_folder)
        problems += found

    settings: list[SamplerSetting] = []
    expanded_problems: list[Problem] = []
    if "samplers" in sections:
        settings, expanded_problems = expand_samplers(document, sections["samplers"], catalog)
        problems += expanded_problems
    if dataset_check is not None and not unresolved:
        problems += _corpus_problems(document, sections, datasets, None if expanded_problems else settings, catalog)

    methods: list[ResolvedMethod] = []
    if {"methods", "train", "model"} <= sections.keys():
        methods, found = _methods_with_encoders(document, sections, catalog, spec_folder)
        problems += found
    methods_ok = "methods" in sections and len(methods) == len(sections["methods"])

    if "samplers" in sections and not expanded_problems:
        problems += check_method_samplers(document, methods, settings)
    if "resources" in sections:
        problems += check_precision(document, methods, sections["resources"])
    tune = None
    if "tune" in sections:
        tune, found = check_tune(document, sections["tune"], methods if methods_ok else None, catalog)
        problems += found
    known_settings = None if "samplers" not in sections or expanded_problems else settings
    problems += _analysis_and_claims(document, sections, datasets, methods if methods_ok else None, known_settings, catalog)
    partitions, found = _replicated_partitions(document, sections, settings, samplers_ok=not expanded_problems)
    problems += found

    seeds: dict[str, tuple[int, ...]] = {}
    if not problems and "replicate" in sections:
        seeds = replicate_seeds(sections["replicate"], settings)
        problems += check_run_count(document, len(datasets), methods, partitions, seeds, tune)
    if problems:
        return None, problems
    assert encoder is not None
    validated = ValidatedSpec(
        source=document.source, profile=profile, document=document, spec=Spec.model_validate(sections), datasets=tuple(datasets),
        encoder=encoder, samplers=tuple(settings), methods=tuple(methods), tune=tune, seeds=seeds,
        partitions=partitions,
    )  # fmt: skip
    return validated, []


def _replicated_partitions(
    document: Document, sections: dict[str, Any], settings: list[SamplerSetting], samplers_ok: bool
) -> tuple[dict[str, tuple[int, ...]], list[Problem]]:
    """The partitions each sampler setting replicates, and the replicate section's problems with them
    (a sequential design's seeds are checked only when the sampler settings expanded cleanly)."""
    if "replicate" not in sections or "samplers" not in sections:
        return {}, []
    partitions, problems = replicate_partitions(document, sections["replicate"], settings)
    if samplers_ok:
        problems += check_sequential_seeds(document, sections["replicate"], settings)
    return partitions, problems


def _corpus_problems(
    document: Document, sections: dict[str, Any], datasets: list[NamedDataset], settings: list[SamplerSetting] | None,
    catalog: Catalog,
) -> list[Problem]:
    """What the corpora, read, show: a split the replicates are scored on that a folder lacks, and
    what the samplers of each setting refuse of a corpus (`settings` None: they have problems of their own)."""
    problems = _replicate_split_problems(document, sections, datasets)
    if settings is not None:
        problems += sampler_refusals(document, datasets, settings, catalog.samplers)
    return problems


def _replicate_split_problems(document: Document, sections: dict[str, Any], datasets: list[NamedDataset]) -> list[Problem]:
    """A corpus folder without the split the replicates are evaluated on (`replicate.split`), each
    named with the one fix that works for it: found at validate, not as an empty results table after
    the run. A dev split drawn from train or from a file counts as one."""
    replicate = sections.get("replicate")
    split = "test" if replicate is None else replicate.split
    problems = []
    for dataset in datasets:
        missing = missing_split_file(dataset.ref, split)
        if missing is None:
            continue
        if split == "dev":
            fix = f"add {missing.name}, or set dev_from_train: 0.1 on the dataset to draw a seeded dev split from train"
        elif missing_split_file(dataset.ref, "dev") is None and sections.get("tune") is None:
            fix = f"add {missing.name}, or set replicate.split: dev"
        else:
            fix = f"add {missing.name} (a share of train moved there; replicates are scored on it)"
        problems.append(document.problem(
            f"dataset '{dataset.label}' has no {split} split ({missing} is missing) but replicate.split is {split}: {fix}",
            dataset.at,
        ))  # fmt: skip
    return problems


def _tuned_and_reported_on_dev(document: Document, sections: dict[str, Any]) -> list[Problem]:
    """Replicates scored on dev while tuning selects on dev: the search's pick would be judged on
    the sentences it was picked on, its scores biased upward."""
    replicate = sections.get("replicate")
    if replicate is None or replicate.split != "dev" or sections.get("tune") is None:
        return []
    return [document.problem(
        "replicate.split is dev, the split tuning selects on: the replicates' scores would be biased upward by the "
        "search. Set replicate.split: test (a corpus without a test split: add test.txt, or give one file with "
        "split: {dev: 0.1, test: 0.1, seed: 0})", ("replicate", "split"),
    )]  # fmt: skip


def _section_datasets(
    document: Document, sections: dict[str, Any], catalog: Catalog, spec_folder: Path, dataset_check: DatasetCheck | None
) -> tuple[list[NamedDataset], list[Problem]]:
    """The corpora of the `dataset` section, or of each entry of `datasets`."""
    if "dataset" not in sections and "datasets" not in sections:
        return [], []
    entries = [(s, ("datasets", i)) for i, s in enumerate(sections.get("datasets") or [])]
    if sections.get("dataset") is not None:
        entries = [(sections["dataset"], ("dataset",))]
    return resolve_datasets(document, entries, catalog, spec_folder, dataset_check)


def _analysis_and_claims(
    document: Document,
    sections: dict[str, Any],
    datasets: list[NamedDataset],
    methods: list[ResolvedMethod] | None,
    known_settings: list[SamplerSetting] | None,
    catalog: Catalog,
) -> list[Problem]:
    """The analysis and claims sections against the methods, datasets and sampler settings they name
    (`methods` None: the methods section has problems of its own, so claims are not checked)."""
    problems: list[Problem] = []
    if "analysis" in sections and "methods" in sections:
        problems += check_analysis(document, sections["analysis"], list(sections["methods"]), known_settings)
    if "claims" in sections and methods is not None:
        known_datasets = [d.label for d in datasets] if len(datasets) == len(sections.get("datasets") or [None]) else None
        problems += check_claims(document, sections["claims"], methods, known_datasets, known_settings, catalog.heads)
    return problems


def _model_encoder(document: Document, model: Any, catalog: Catalog, spec_folder: Path) -> tuple[EncoderSettings, list[Problem]]:
    """The `model` section's encoder, located and with its window settings checked."""
    name, problems = _located_encoder(document, model.encoder, ("model", "encoder"), catalog, spec_folder)
    problems += check_window(document, model)
    return EncoderSettings(name=name, max_length=model.max_length, window_stride=model.window_stride), problems


def _methods_with_encoders(
    document: Document, sections: dict[str, Any], catalog: Catalog, spec_folder: Path
) -> tuple[list[ResolvedMethod], list[Problem]]:
    """The resolved methods, each own encoder of a method located (Wang & Wang 2022's word-embedding models)."""
    methods, problems = resolve_methods(document, sections["methods"], sections["train"], sections["model"], catalog)
    for i, method in enumerate(methods):
        if method.encoder is not None:
            name, found = _located_encoder(document, method.encoder, ("methods", method.name, "encoder"), catalog, spec_folder)
            problems += found
            methods[i] = replace(method, encoder=name)
    return methods, problems


def _located_encoder(
    document: Document, name: str, at: YamlPath, catalog: Catalog, spec_folder: Path
) -> tuple[str, list[Problem]]:
    """`_encoder_name`, with its problem located at `at` of the document."""
    resolved, problem = _encoder_name(name, catalog, spec_folder)
    return resolved, [] if problem is None else [document.problem(problem, at)]


def _encoder_name(name: str, catalog: Catalog, spec_folder: Path) -> tuple[str, str | None]:
    """A registered encoder, a model folder (relative to the spec, made absolute) or a hub id.

    A folder counts only with a `config.json` in it, so `../../etc` fails here and not inside a trial.
    """
    if name in catalog.encoders:
        return name, None
    folder = spec_folder / Path(name).expanduser()
    if (folder / "config.json").is_file():
        return str(folder.resolve()), None
    if folder.is_dir():
        return name, f"folder {folder.resolve()} holds no Hugging Face model (no config.json): give the model's own folder"
    if "/" in name and is_hub_id(name):
        return name, None
    return name, catalog.encoders.unknown_message(name) + "; or give a Hugging Face id (owner/name) or a model folder"


def _validate_sections(document: Document, data: dict[str, Any]) -> tuple[dict[str, Any], list[Problem]]:
    """Each section alone against its schema; sections left out take their defaults."""
    problems: list[Problem] = []
    fields = {name: info for name, info in Spec.model_fields.items() if name != PROFILES_KEY}
    for key in data:
        if key not in fields and key != PROFILES_KEY and not key.startswith(EXTENSION_PREFIX):
            problems.append(document.problem(unknown_name("section", key, fields, listed_as="sections"), (key,)))
    sections: dict[str, Any] = {}
    for name, info in fields.items():
        if name not in data:
            if info.is_required():
                problems.append(document.problem(f"the spec needs a `{name}` section ({info.description})", ()))
            else:
                sections[name] = info.get_default(call_default_factory=True)
            continue
        try:
            sections[name] = TypeAdapter(info.rebuild_annotation()).validate_python(data[name])
        except ValidationError as error:
            problems += problems_from(error.errors(include_url=False), document, (name,), data[name], info.annotation, what=name)
    if sections.get("dataset") is not None and sections.get("datasets") is not None:
        problems.append(document.problem("give either dataset (one) or datasets (a list), not both", ("datasets",)))
    elif sections.get("dataset") is None and sections.get("datasets") is None and {"dataset", "datasets"} <= sections.keys():
        problems.append(document.problem("the spec needs a dataset (dataset: conll2003) or datasets (a list)", ()))
    return sections, problems
