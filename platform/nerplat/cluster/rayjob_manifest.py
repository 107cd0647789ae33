"""The KubeRay RayJob that runs one spec on Kubernetes, sized from the spec's `resources`.

The job brings up its own Ray cluster (`rayClusterSpec`), a copy of the RayCluster in `cluster/base`
or in an overlay, so one file describes a nerplat Ray pod. Only the worker group changes: each worker
pod holds one Ray Train worker (its CPUs, GPUs and custom resources) plus one CPU for the trial's
driver, and the autoscaler may start as many pods as the concurrent trials need.
"""

from __future__ import annotations

import copy
import json
import math
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nerplat.cluster import kustomize
from nerplat.cluster.manifests import Manifest
from nerplat.config.experiment import Resources
from nerplat.errors import Problem, UserInputError
from nerplat.plan.compiler import compile_plan
from nerplat.spec.validate import SpecSource
from nerplat.plan.model import Plan
from nerplat.plugins import PLUGINS_KEY, plugin_path
from nerplat.registry import Catalog
from nerplat.spec.loader import read_document

DEFAULT_CLUSTER_DIR = Path("cluster/base")
SPECS_DIR = "specs"
GPU = "nvidia.com/gpu"
TRIAL_DRIVER_CPUS = 1  # the trial's Tune function and TorchTrainer controller run beside its first worker
STORAGE_ENV = "NERPLAT_RAY_STORAGE"  # set by the ConfigMap nerplat-settings
PLACEHOLDER_IMAGE = "nerplat"  # the base's image name, replaced by an overlay's `images` or --image
JOB_TTL_SECONDS = 3600  # the finished job's cluster is deleted at once; the RayJob object this long after


@dataclass(frozen=True)
class JobSizing:
    """What the RayJob needs to know of a spec: its name and what its trials ask Ray for."""

    experiment: str
    resources: Resources
    max_concurrent_trials: int | None


def render_rayjob(
    spec_path: Path,
    sizing: JobSizing,
    *,
    profile: str | None = None,
    image: str | None = None,
    cluster_dir: Path = DEFAULT_CLUSTER_DIR,
    repo_root: Path | None = None,
    default_image: str | None = None,
) -> dict[str, Any]:
    """The RayJob manifest (plain data) that runs `nerplat run <spec> [--profile P]` on its own cluster.

    `cluster_dir` is a kustomization (the base or an overlay) holding exactly one RayCluster; the spec
    must live under `specs/` of `repo_root` (default: the working directory), the folder the image
    copies to its working directory. `default_image` replaces the base's placeholder image when
    neither `image` nor the overlay names one (without it, the placeholder is refused).
    """
    raycluster = _the_raycluster(kustomize.build(cluster_dir), cluster_dir)
    cluster_spec = copy.deepcopy(raycluster.body["spec"])
    _size_worker_group(cluster_spec, sizing, raycluster)
    _set_image(cluster_spec, image, raycluster, default_image)
    metadata: dict[str, Any] = {
        "name": job_name(sizing.experiment, profile),
        "labels": {"app.kubernetes.io/part-of": "nerplat", "nerplat.io/experiment": _dns_label(sizing.experiment)},
    }
    namespace = raycluster.body["metadata"].get("namespace")
    if namespace:
        metadata["namespace"] = namespace
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": metadata,
        "spec": {
            "entrypoint": entrypoint(spec_path, profile, repo_root or Path.cwd()),
            # One attempt: a failed experiment is resumed deliberately (`nerplat run --resume`).
            "backoffLimit": 0,
            "shutdownAfterJobFinishes": True,
            "ttlSecondsAfterFinished": JOB_TTL_SECONDS,
            "rayClusterSpec": cluster_spec,
        },
    }


def entrypoint(spec_path: Path, profile: str | None, repo_root: Path) -> str:
    """`nerplat run specs/<spec>.yaml [--profile P] --storage "$NERPLAT_RAY_STORAGE"`.

    The shell on the head expands the variable: Tune's results go to the bucket in nerplat-settings,
    which every pod also has in its environment (Ray Train workers read it there).
    """
    command = ["nerplat", "run", _spec_in_image(spec_path, repo_root)]
    _plugin_files_in_image(spec_path, repo_root)
    if profile:
        command += ["--profile", profile]
    return f'{shlex.join(command)} --storage "${STORAGE_ENV}"'


def _plugin_files_in_image(spec_path: Path, repo_root: Path) -> None:
    """Plugin files and folders the spec names must be under specs/ too: the driver in the head pod
    imports them from the image and ships them to the workers (module plugins must be installed in it)."""
    document, _ = read_document(spec_path)
    names = document.data.get(PLUGINS_KEY) if isinstance(document.data, dict) else None
    specs_root = (repo_root / SPECS_DIR).resolve()
    problems = []
    for index, name in enumerate(names if isinstance(names, list) else []):
        path = plugin_path(name, spec_path.parent) if isinstance(name, str) else None
        if path is not None and not path.is_relative_to(specs_root):
            message = (
                f"plugin {name}: the cluster image holds only {SPECS_DIR}/; move it there, "
                "or install it in the image as a package"
            )
            problems.append(document.problem(message, (PLUGINS_KEY, index)))
    if problems:
        raise UserInputError(problems)


def job_name(experiment: str, profile: str | None) -> str:
    """Deterministic and a valid Kubernetes name; short enough for the pod names KubeRay derives from it."""
    name = _dns_label("-".join(part for part in ("nerplat", experiment, profile) if part))
    return name[:40].rstrip("-")


def _dns_label(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:63].rstrip("-") or "x"


def _the_raycluster(manifests: list[Manifest], cluster_dir: Path) -> Manifest:
    clusters = [manifest for manifest in manifests if manifest.kind == "RayCluster"]
    if len(clusters) != 1:
        raise UserInputError(
            Problem(f"{cluster_dir} must define exactly one RayCluster to copy into the RayJob, found {len(clusters)}")
        )
    return clusters[0]


def _size_worker_group(cluster_spec: dict[str, Any], sizing: JobSizing, raycluster: Manifest) -> None:
    groups = cluster_spec.get("workerGroupSpecs") or []
    if len(groups) != 1:
        raise UserInputError(raycluster.problem("nerplat sizes exactly one worker group", ["spec", "workerGroupSpecs"]))
    group = groups[0]
    resources = sizing.resources
    container = group["template"]["spec"]["containers"][0]
    limits = container.setdefault("resources", {}).setdefault("limits", {})
    requests = container["resources"].setdefault("requests", {})
    cpus = str(math.ceil(resources.cpus_per_worker) + TRIAL_DRIVER_CPUS)
    limits["cpu"] = requests["cpu"] = cpus
    if resources.gpus_per_worker > 0:
        limits[GPU] = str(math.ceil(resources.gpus_per_worker))
    else:
        limits.pop(GPU, None)
        requests.pop(GPU, None)
    if resources.custom:
        # KubeRay pastes this into the shell command `ray start --resources=...`: JSON with its
        # quotes escaped, in quotes (the form KubeRay's docs give).
        custom = json.dumps(dict(sorted(resources.custom.items())))
        group.setdefault("rayStartParams", {})["resources"] = '"' + custom.replace('"', '\\"') + '"'
    if sizing.max_concurrent_trials:
        group["maxReplicas"] = resources.workers * sizing.max_concurrent_trials
    else:
        group["maxReplicas"] = max(group["maxReplicas"], resources.workers)
    group["minReplicas"] = min(group["minReplicas"], group["maxReplicas"])
    group["replicas"] = min(group.get("replicas", 0), group["maxReplicas"])


def _set_image(cluster_spec: dict[str, Any], image: str | None, raycluster: Manifest, default_image: str | None) -> None:
    groups = [cluster_spec["headGroupSpec"], *cluster_spec["workerGroupSpecs"]]
    containers = [container for group in groups for container in group["template"]["spec"]["containers"]]
    placeholder = any(container["image"].split(":")[0] == PLACEHOLDER_IMAGE for container in containers)
    image = image or (default_image if placeholder else None)
    if image:
        for container in containers:
            container["image"] = image
    elif placeholder:
        raise UserInputError(
            raycluster.problem(
                f"the RayCluster still has the placeholder image '{PLACEHOLDER_IMAGE}': pass --image "
                "REGISTRY/nerplat:TAG, or render from your overlay (--cluster cluster/overlays/NAME)"
            )
        )


def _spec_in_image(spec_path: Path, repo_root: Path) -> str:
    """The spec's path relative to the repository root, which must be under specs/ (what the image has)."""
    try:
        relative = spec_path.resolve().relative_to(repo_root.resolve())
    except ValueError:
        relative = None
    if relative is None or relative.parts[:1] != (SPECS_DIR,):
        raise UserInputError(
            Problem(
                f"the cluster image holds only the repository's {SPECS_DIR}/ folder: move the spec there "
                "and rebuild the image (cluster/README.md)",
                source=str(spec_path),
            )
        )
    return relative.as_posix()


def load_sizing(spec_path: Path, catalog: Catalog, profile: str | None) -> JobSizing:
    """Compiles the spec (with its profile) against `catalog` and sizes the job from its plan.

    The caller hands the catalog down (the CLI's is `nerplat.catalog.spec_catalog`, with the spec's
    plugins), as it does to `spec` and `plan`: the real entries live a floor above this one.
    """
    return sizing_of(compile_plan(SpecSource(spec_path, profile), catalog))


def sizing_of(plan: Plan) -> JobSizing:
    """Resources are spec-wide (every arm has the same), so the first arm speaks for all."""
    return JobSizing(plan.experiment, plan.arms[0].resources, plan.tune.max_concurrent if plan.tune else None)
