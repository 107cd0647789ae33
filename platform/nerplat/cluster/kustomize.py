"""An offline renderer for the small subset of Kustomize that `cluster/` uses.

`kubectl kustomize` needs a kubectl, which neither tests nor `nerplat cluster render` can count on,
and the overlays here only need: `resources` (files and folders), `namespace`, `images`,
`configMapGenerator` with literals or files (create or merge, no name-suffix hash) and `patches`
made of JSON 6902 operations (add, replace, remove) aimed at a kind and name. Anything else is refused with a
message, so the renderer never silently disagrees with kubectl; a test compares both where kubectl
exists.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from nerplat.cluster.manifests import Manifest, load_manifests, parse_yaml
from nerplat.errors import Problem, UserInputError

KUSTOMIZATION = "kustomization.yaml"
SUPPORTED_FIELDS = {
    "apiVersion",
    "kind",
    "resources",
    "namespace",
    "images",
    "configMapGenerator",
    "generatorOptions",
    "patches",
}
PATCH_OPS = {"add", "replace", "remove"}


def is_kustomization(directory: Path) -> bool:
    return (directory / KUSTOMIZATION).is_file()


def build(directory: Path) -> list[Manifest]:
    """The objects `kubectl kustomize DIRECTORY` would print, for the supported subset."""
    directory = Path(directory)
    file = directory / KUSTOMIZATION
    if not file.is_file():
        raise UserInputError(Problem(f"no {KUSTOMIZATION} in {directory}", source=str(directory)))
    source = str(file)
    spec = parse_yaml(file.read_text(encoding="utf-8"), source) or {}
    if not isinstance(spec, dict):
        raise UserInputError(Problem(f"a {KUSTOMIZATION} must be a mapping of fields (resources:, patches:, ...)", source=source))
    unsupported = sorted(set(spec) - SUPPORTED_FIELDS)
    if unsupported:
        raise UserInputError(
            Problem(
                f"field(s) {', '.join(unsupported)} are beyond nerplat's offline Kustomize renderer "
                f"(supported: {', '.join(sorted(SUPPORTED_FIELDS))}); use `kubectl kustomize` instead",
                source=source,
            )
        )
    manifests: list[Manifest] = []
    for entry in spec.get("resources", []):
        target = directory / entry
        manifests += build(target) if target.is_dir() else load_manifests(target)
    manifests = _generate_config_maps(manifests, spec, directory, source)
    for patch in spec.get("patches", []):
        manifests = _apply_patch(manifests, patch, directory, source)
    if "images" in spec:
        manifests = [_with_body(m, _set_images(copy.deepcopy(m.body), spec["images"])) for m in manifests]
    if "namespace" in spec:
        accounts = {m.name for m in manifests if m.kind == "ServiceAccount"}
        manifests = [_with_namespace(m, spec["namespace"], accounts) for m in manifests]
    return manifests


def _with_body(manifest: Manifest, body: dict[str, Any]) -> Manifest:
    return Manifest(body, manifest.source, manifest.node)


def _with_namespace(manifest: Manifest, namespace: str, accounts: set[str]) -> Manifest:
    """The object moved to `namespace`, as Kustomize moves it: a role binding's ServiceAccount
    subjects move too when they name one of the ServiceAccounts built with it (`accounts`)."""
    body = copy.deepcopy(manifest.body)
    body.setdefault("metadata", {})["namespace"] = namespace
    if manifest.kind in ("RoleBinding", "ClusterRoleBinding"):
        for subject in body.get("subjects", []):
            if subject.get("kind") == "ServiceAccount" and subject.get("name") in accounts:
                subject["namespace"] = namespace
    return _with_body(manifest, body)


def _generate_config_maps(manifests: list[Manifest], spec: dict[str, Any], directory: Path, source: str) -> list[Manifest]:
    generators = spec.get("configMapGenerator", [])
    if generators and not spec.get("generatorOptions", {}).get("disableNameSuffixHash", False):
        if any(generator.get("behavior", "create") == "create" for generator in generators):
            raise UserInputError(
                Problem(
                    "configMapGenerator without generatorOptions.disableNameSuffixHash: true is beyond "
                    "nerplat's offline renderer (name-suffix hashes); use `kubectl kustomize`",
                    source=source,
                )
            )
    manifests = list(manifests)
    for generator in generators:
        extra = sorted(set(generator) - {"name", "literals", "files", "behavior"})
        if extra:
            raise UserInputError(
                Problem(f"configMapGenerator {generator.get('name')}: {', '.join(extra)} not supported offline", source=source)
            )
        data = dict(literal.split("=", 1) for literal in generator.get("literals", []))
        for entry in generator.get("files", []):
            key, text = _file_entry(entry, directory, source)
            data[key] = text
        behavior = generator.get("behavior", "create")
        index = next(
            (i for i, m in enumerate(manifests) if m.kind == "ConfigMap" and m.name == generator["name"]), None
        )
        if behavior == "create":
            body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": generator["name"]}, "data": data}
            manifests.append(Manifest(body, source))
        elif index is None:
            raise UserInputError(
                Problem(f"configMapGenerator {generator['name']}: nothing to {behavior} in the resources", source=source)
            )
        else:
            body = copy.deepcopy(manifests[index].body)
            body["data"] = {**body.get("data", {}), **data} if behavior == "merge" else data
            manifests[index] = Manifest(body, source)
    return manifests


def _file_entry(entry: str, directory: Path, source: str) -> tuple[str, str]:
    """A generator's `files` entry (`path` or `key=path`): its key and the file's text. Like kubectl,
    only files inside the kustomization's folder are read."""
    key, _, path = entry.rpartition("=")
    file = (directory / path).resolve()
    if not file.is_relative_to(directory.resolve()):
        message = f"configMapGenerator file {path} is outside {directory}: Kustomize refuses it"
        raise UserInputError(Problem(message, source=source))
    if not file.is_file():
        raise UserInputError(Problem(f"configMapGenerator file {path}: no such file", source=source))
    return key or file.name, file.read_text(encoding="utf-8")


def _apply_patch(manifests: list[Manifest], patch: dict[str, Any], directory: Path, source: str) -> list[Manifest]:
    target = patch.get("target", {})
    inline = "patch" in patch
    text = patch["patch"] if inline else (directory / patch["path"]).read_text(encoding="utf-8")
    operations = parse_yaml(text, f"{source} (inline patch)" if inline else str(directory / patch["path"]))
    if not isinstance(operations, list) or set(target) - {"kind", "name", "group", "version"}:
        raise UserInputError(
            Problem(
                "only JSON 6902 patches (a list of operations) with a target of kind/name are supported offline; "
                "use `kubectl kustomize` for strategic-merge patches",
                source=source,
            )
        )
    matched = False
    patched = []
    for manifest in manifests:
        if target.get("kind", manifest.kind) == manifest.kind and target.get("name", manifest.name) == manifest.name:
            matched = True
            body = copy.deepcopy(manifest.body)
            for operation in operations:
                _apply_operation(body, operation, source)
            manifest = _with_body(manifest, body)
        patched.append(manifest)
    if not matched:
        raise UserInputError(Problem(f"patch target {target} matches no resource", source=source))
    return patched


def _apply_operation(body: dict[str, Any], operation: dict[str, Any], source: str) -> None:
    op, pointer = operation.get("op"), operation.get("path", "")
    if op not in PATCH_OPS:
        message = f"patch op {op!r} not supported offline (use {', '.join(sorted(PATCH_OPS))})"
        raise UserInputError(Problem(message, source=source))
    *parents, last = [part.replace("~1", "/").replace("~0", "~") for part in pointer.split("/")[1:]]
    node: Any = body
    try:
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        if isinstance(node, list):
            index = len(node) if last == "-" else int(last)
            if op == "add":
                node.insert(index, operation["value"])
            elif op == "replace":
                node[index] = operation["value"]
            else:
                del node[index]
        elif op != "add" and last not in node:
            raise KeyError(last)
        elif op == "remove":
            del node[last]
        else:
            node[last] = operation["value"]
    except (KeyError, IndexError, ValueError, TypeError) as error:
        raise UserInputError(Problem(f"patch {op} {pointer}: no such path ({error})", source=source)) from error


def _set_images(node: Any, images: list[dict[str, Any]]) -> Any:
    """Kustomize's image transformer: rewrites `image` of every container and init container."""
    if isinstance(node, list):
        return [_set_images(item, images) for item in node]
    if not isinstance(node, dict):
        return node
    for key, value in node.items():
        if key in ("containers", "initContainers") and isinstance(value, list):
            for container in value:
                if isinstance(container, dict) and "image" in container:
                    container["image"] = _new_image(container["image"], images)
        node[key] = _set_images(value, images)
    return node


def _new_image(image: str, images: list[dict[str, Any]]) -> str:
    name, tag = image, ""
    if "@" in image:
        name, tag = image.split("@", 1)
        tag = "@" + tag
    elif ":" in image.rsplit("/", 1)[-1]:
        name, tag = image.rsplit(":", 1)
        tag = ":" + tag
    for rule in images:
        if rule["name"] == name:
            name = rule.get("newName", name)
            if "digest" in rule:
                tag = "@" + rule["digest"]
            elif "newTag" in rule:
                tag = ":" + str(rule["newTag"])
    return name + tag
