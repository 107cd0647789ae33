"""Offline validation of the manifests nerplat deploys, strict enough to catch a misspelt field.

There is no API server to ask (`kubectl --dry-run=client` needs one), so:

- RayCluster and RayJob are checked against the `openAPIV3Schema` of the KubeRay CRDs shipped in
  this package (`crds/`, whose README names their KubeRay commit), or those in `$NERPLAT_K8S_SCHEMAS`
  when it is set (to validate against another KubeRay release). The CRDs never
  forbid unknown fields (the API server prunes them silently, so a misspelt `minReplica` would just
  vanish); `strict_schema` adds `additionalProperties: false` wherever a schema lists its properties
  and neither allows extras explicitly nor sets `x-kubernetes-preserve-unknown-fields`.
- Built-in kinds (Deployment, Service, ConfigMap, ...) go to the `kubernetes-validate` package in
  its strict mode, which reports the first problem of each object.

Not checked offline: the CRDs' CEL rules (`x-kubernetes-validations`) and anything only the cluster
knows (that referenced Secrets exist, quotas, admission webhooks).
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from nerplat.cluster import kustomize
from nerplat.cluster.manifests import FAST_LOADER, Manifest, PathSegment, load_manifests, parse_yaml
from nerplat.errors import Problem, UserInputError
from nerplat.suggest import did_you_mean

SCHEMAS_ENV = "NERPLAT_K8S_SCHEMAS"
CRD_FILES = {"RayCluster": "ray.io_rayclusters.yaml", "RayJob": "ray.io_rayjobs.yaml"}
CRD_GROUP = "ray.io"
PACKAGED_CRDS = Path(__file__).resolve().parent / "crds"


def schemas_dir() -> Path:
    """Folder of the KubeRay CRDs: `$NERPLAT_K8S_SCHEMAS`, else the copies shipped with the package."""
    configured = os.environ.get(SCHEMAS_ENV)
    return Path(configured) if configured else PACKAGED_CRDS


def strict_schema(schema: Any) -> Any:
    """A copy of an OpenAPI v3 schema in which every object that lists `properties` forbids others."""
    schema = copy.deepcopy(schema)
    _forbid_unlisted_properties(schema)
    return schema


def _forbid_unlisted_properties(node: Any) -> None:
    if isinstance(node, list):
        for item in node:
            _forbid_unlisted_properties(item)
        return
    if not isinstance(node, dict):
        return
    if (
        "properties" in node
        and "additionalProperties" not in node
        and not node.get("x-kubernetes-preserve-unknown-fields", False)
    ):
        node["additionalProperties"] = False
    for key in ("properties", "patternProperties", "definitions"):
        for child in node.get(key, {}).values():
            _forbid_unlisted_properties(child)
    for key in ("items", "additionalProperties", "not", "allOf", "anyOf", "oneOf"):
        if key in node:
            _forbid_unlisted_properties(node[key])


@lru_cache(maxsize=None)
def crd_schema(kind: str, version: str) -> dict[str, Any]:
    """The strict schema of a KubeRay kind at an API version (`v1`), read once per process."""
    path = schemas_dir() / CRD_FILES[kind]
    if not path.is_file():
        raise UserInputError(
            Problem(
                f"KubeRay CRD schema for {kind} not found at {path}; set {SCHEMAS_ENV} to the folder "
                f"holding {', '.join(sorted(CRD_FILES.values()))}"
            )
        )
    with path.open(encoding="utf-8") as handle:
        crd = yaml.load(handle, Loader=FAST_LOADER)
    versions = {entry["name"]: entry for entry in crd["spec"]["versions"]}
    if version not in versions:
        raise KeyError(version)
    return strict_schema(versions[version]["schema"]["openAPIV3Schema"])


def manifest_problems(manifest: Manifest) -> list[Problem]:
    """Everything wrong with one object (empty when it is valid)."""
    body = manifest.body
    missing = [field for field in ("apiVersion", "kind") if not isinstance(body.get(field), str)]
    if missing:
        return [manifest.problem(f"missing required field '{field}'") for field in missing]
    group, _, version = body["apiVersion"].rpartition("/")
    if group == CRD_GROUP:
        return _crd_problems(manifest, version) + _object_meta_problems(manifest)
    return _builtin_problems(manifest)


def _crd_problems(manifest: Manifest, version: str) -> list[Problem]:
    import jsonschema

    if manifest.kind not in CRD_FILES:
        known = ", ".join(sorted(CRD_FILES))
        return [manifest.problem(f"unknown kind for apiVersion {CRD_GROUP}/{version}; nerplat validates {known}")]
    try:
        schema = crd_schema(manifest.kind, version)
    except KeyError:
        return [manifest.problem(f"apiVersion {CRD_GROUP}/{version} is not served by the KubeRay CRD", ["apiVersion"])]
    validator = jsonschema.Draft7Validator(schema)
    errors = sorted(validator.iter_errors(manifest.body), key=lambda error: list(map(str, error.absolute_path)))
    return [problem for error in errors for problem in _describe(manifest, error, ())]


def _object_meta_problems(manifest: Manifest) -> list[Problem]:
    """The CRDs leave `metadata` open (the API server checks it as ObjectMeta); check it the same way.

    kubernetes-validate has no stand-alone ObjectMeta entry point, so the metadata is validated as that
    of a ConfigMap, the kind whose schema is ObjectMeta plus optional data.
    """
    metadata = manifest.body.get("metadata")
    if not isinstance(metadata, dict) or not isinstance(metadata.get("name"), str):
        return [manifest.problem("missing required field 'name'", ["metadata"])]
    stand_in = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata}
    return _builtin_problems(manifest, stand_in)


def _builtin_problems(manifest: Manifest, body: dict[str, Any] | None = None) -> list[Problem]:
    import kubernetes_validate

    try:
        kubernetes_validate.validate(body or manifest.body, kubernetes_validate.latest_version(), strict=True)
    except kubernetes_validate.SchemaNotFoundError:
        return [manifest.problem(f"unknown kind {manifest.kind} in apiVersion {manifest.body['apiVersion']}")]
    except kubernetes_validate.ValidationError as error:
        return list(_describe(manifest, error, ()))
    return []


def _describe(manifest: Manifest, error: Any, prefix: tuple[PathSegment, ...]) -> Iterable[Problem]:
    """Turns a jsonschema error into problems that say where (path, line) and what to do."""
    path = prefix + tuple(error.absolute_path)
    kind, instance, schema = error.validator, error.instance, error.schema
    if kind == "additionalProperties" and isinstance(instance, dict):
        allowed = sorted(schema.get("properties", {}))
        for field in sorted(set(instance) - set(allowed)):
            suggestion = did_you_mean(field, allowed) or f"; allowed here: {', '.join(allowed)}"
            yield manifest.problem(f"unknown field '{field}'{suggestion}", path + (field,), key=True)
    elif kind == "required":
        yield manifest.problem(f"missing required field '{_missing(error)}'", path)
    elif kind == "type":
        expected = error.validator_value
        yield manifest.problem(f"expected {_or(expected)}, got {_json_type(instance)} {json.dumps(instance)}", path)
    elif kind == "enum":
        yield manifest.problem(f"must be one of {_or(error.validator_value)}, got {json.dumps(instance)}", path)
    else:
        yield manifest.problem(error.message, path)


def _missing(error: Any) -> str:
    present = error.instance if isinstance(error.instance, dict) else {}
    return next((field for field in error.validator_value if field not in present), "?")


def _or(values: Any) -> str:
    values = values if isinstance(values, list) else [values]
    return " or ".join(json.dumps(value) if not isinstance(value, str) else value for value in values)


def _json_type(value: Any) -> str:
    names = {bool: "boolean", int: "integer", float: "number", str: "string", list: "array", dict: "object"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


def validate_manifests(manifests: Iterable[Manifest]) -> None:
    """Raises `UserInputError` with every problem of every object, or returns when all are valid."""
    problems = [problem for manifest in manifests for problem in manifest_problems(manifest)]
    if problems:
        raise UserInputError(problems)


def validate_tree(paths: Iterable[Path]) -> list[tuple[str, int]]:
    """Validates every kustomization (rendered offline) and every other manifest under `paths`.

    Returns (what, number of objects) for each thing checked; raises `UserInputError` with all
    problems of all of them.
    """
    checked: list[tuple[str, int]] = []
    problems: list[Problem] = []

    def check(label: str, load) -> None:
        try:
            manifests = load()
        except UserInputError as error:
            problems.extend(error.problems)
            return
        problems.extend(problem for manifest in manifests for problem in manifest_problems(manifest))
        checked.append((label, len(manifests)))

    for root in map(Path, paths):
        if root.is_file():
            check(str(root), lambda root=root: load_manifests(root))
            continue
        if not root.is_dir():
            problems.append(Problem("no such file or folder", source=str(root)))
            continue
        kustomizations = sorted(p.parent for p in root.rglob(kustomize.KUSTOMIZATION))
        covered: set[Path] = set()
        for directory in kustomizations:
            try:
                covered |= _resource_files(directory)
            except UserInputError:
                pass  # kustomize.build(directory) below reports it, with its file and line
        for directory in kustomizations:
            check(f"{directory}/ (kustomize)", lambda directory=directory: kustomize.build(directory))
        for file in sorted({*root.rglob("*.yaml"), *root.rglob("*.yml")}):
            if file.name != kustomize.KUSTOMIZATION and file.resolve() not in covered:
                check(str(file), lambda file=file: load_manifests(file))
    if problems:
        raise UserInputError(problems)
    return checked


def _resource_files(directory: Path) -> set[Path]:
    """Manifest files a kustomization includes, directly or through the folders it includes."""
    file = directory / kustomize.KUSTOMIZATION
    spec = parse_yaml(file.read_text(encoding="utf-8"), str(file)) or {}
    files: set[Path] = set()
    if not isinstance(spec, dict):
        return files  # kustomize.build refuses it, naming the file
    for entry in spec.get("resources", []):
        target = directory / entry
        if kustomize.is_kustomization(target):
            files |= _resource_files(target)
        elif target.is_file():
            files.add(target.resolve())
    for patch in spec.get("patches", []):
        if "path" in patch:
            files.add((directory / patch["path"]).resolve())
    return files
