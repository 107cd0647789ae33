"""`nerplat cluster render|submit|validate`: the same spec as a KubeRay RayJob on Kubernetes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.console import Console

from nerplat.atomic_files import write_atomically
from nerplat.cli.options import PROFILE_OPTION, package_version
from nerplat.unfolded import print_command, print_unfolded
from nerplat.errors import Problem, UserInputError

cluster_app = typer.Typer(
    name="cluster",
    help="Run specs on a Kubernetes GPU cluster (KubeRay): render, submit and validate manifests.",
    no_args_is_help=True,
)
console = Console(emoji=False, highlight=False, markup=False)  # user text (paths, names) may hold [brackets]
err_console = Console(emoji=False, stderr=True, highlight=False, markup=False)

ImageOption = typer.Option(
    None, "--image",
    help="Container image of the Ray pods (default: the one in --cluster; for the base, nerplat:<version>, the "
    "Dockerfile's tag).",
)
ClusterOption = typer.Option(
    Path("cluster/base"), "--cluster", help="Kustomization (base or your overlay) whose RayCluster the job copies."
)


def _rayjob_for_spec(spec: Path, profile: str | None, image: str | None, cluster: Path) -> dict[str, Any]:
    # lazy: the manifest checks and the catalog (torch), which --help does not need
    from nerplat.catalog import spec_catalog
    from nerplat.cluster.manifests import Manifest
    from nerplat.cluster.rayjob_manifest import load_sizing, render_rayjob
    from nerplat.cluster.validate import validate_manifests

    sizing = load_sizing(spec, spec_catalog(spec), profile)
    if sizing.resources.gpus_per_worker == 0:
        no_gpus = f"note: {spec} asks for no GPUs (resources.gpus_per_worker), so its worker pods get none"
        print_unfolded(err_console, no_gpus, hanging=2, markup=False)

    default_image = f"nerplat:{package_version()}"
    rayjob = render_rayjob(spec, sizing, profile=profile, image=image, cluster_dir=cluster, default_image=default_image)
    images = {c["image"] for g in _pod_groups(rayjob) for c in g["template"]["spec"]["containers"]}
    if image is None and default_image in images:
        note = f"note: image {default_image}, which you build with this command (or give --image REGISTRY/nerplat:TAG for a "
        print_unfolded(err_console, note + "registry the cluster pulls from):", hanging=2, markup=False)
        print_command(err_console, ["docker", "build", "-f", "cluster/Dockerfile", "-t", default_image, "."])
    validate_manifests([Manifest(rayjob, f"<RayJob rendered from {spec}>")])
    return rayjob


def _pod_groups(rayjob: dict[str, Any]) -> list[dict[str, Any]]:
    cluster_spec = rayjob["spec"]["rayClusterSpec"]
    return [cluster_spec["headGroupSpec"], *cluster_spec["workerGroupSpecs"]]


def _rayjob_in_file(path: Path) -> dict[str, Any] | None:
    """The RayJob a manifest file holds (validated), or None when the file is not a RayJob manifest."""
    # lazy: the manifest checks, which --help does not need
    from nerplat.cluster.manifests import load_manifests
    from nerplat.cluster.validate import validate_manifests

    try:
        manifests = load_manifests(path)
    except UserInputError:
        return None
    if len(manifests) != 1 or manifests[0].kind != "RayJob":
        return None
    validate_manifests(manifests)
    return manifests[0].body


@cluster_app.command("render")
def render(
    spec: Path = typer.Argument(..., help="Spec under specs/ (the folder the image carries)."),
    profile: str | None = PROFILE_OPTION,
    image: str | None = ImageOption,
    cluster: Path = ClusterOption,
    out: Path | None = typer.Option(None, "--out", "-o", help="Write here instead of printing."),
) -> None:
    """Write the RayJob that runs SPEC on its own autoscaling Ray cluster, sized from the spec's resources."""
    # lazy: the manifest checks, which --help does not need
    from nerplat.cluster.manifests import dump_manifests

    text = dump_manifests([_rayjob_for_spec(spec, profile, image, cluster)])
    if out is None:
        typer.echo(text, nl=False)
    else:
        write_atomically(out, text)
        err_console.print(f"wrote {out}; start it with `kubectl apply -f {out}` or `nerplat cluster submit {out}`")


@cluster_app.command("submit")
def submit(
    target: Path = typer.Argument(..., help="A RayJob manifest, or a spec to render first."),
    address: str | None = typer.Option(
        None, "--address", help="Ray job API of a running cluster, e.g. http://127.0.0.1:8265 (else kubectl apply)."
    ),
    kubectl: bool = typer.Option(False, "--kubectl", help="Apply the RayJob with kubectl (the default without --address)."),
    profile: str | None = PROFILE_OPTION,
    image: str | None = ImageOption,
    cluster: Path = typer.Option(
        Path("cluster/base"), "--cluster", help="Kustomization whose RayCluster the job copies (kubectl only)."
    ),
    wait: bool = typer.Option(False, "--wait", help="With --address: wait for the job to end; exit 1 unless it succeeded."),
    allow_plain_http: bool = typer.Option(
        False, "--allow-plain-http",
        help="Send the Ray token over http to a non-loopback --address (else only https or loopback).",
    ),
) -> None:
    """Start a RayJob: `kubectl apply` it for KubeRay, or send its entrypoint to a Ray cluster's job API."""
    # lazy: the job clients and the catalog (torch), which --help does not need
    from nerplat.catalog import spec_catalog
    from nerplat.cluster.rayjob_manifest import entrypoint, job_name, load_sizing
    from nerplat.cluster.submit import (
        apply_with_kubectl, refuse_malformed_job_address, submit_rayjob_to_ray, submit_to_ray, wait_for_job,
    )

    if address and kubectl:
        raise UserInputError(Problem("choose one of --address (Ray job API) and --kubectl (KubeRay)"))
    if wait and not address:
        raise UserInputError(Problem("--wait needs --address; follow a KubeRay job with `kubectl get rayjob -w`"))
    if address:
        refuse_malformed_job_address(address)
    if not target.is_file():
        raise UserInputError(Problem("no such file", source=str(target)))
    rayjob = _rayjob_in_file(target)
    if not address:
        console.print(apply_with_kubectl(rayjob or _rayjob_for_spec(target, profile, image, cluster)))
        return
    if rayjob is not None:
        job_id = submit_rayjob_to_ray(rayjob, address, allow_plain_http)
    else:  # the running cluster has its pods already: only the command matters
        name = job_name(load_sizing(target, spec_catalog(target), profile).experiment, profile)
        job_id = submit_to_ray(entrypoint(target, profile, Path.cwd()), name, address, allow_plain_http=allow_plain_http)
    console.print(f"submitted {job_id} to {address}; logs: ray job logs --address {address} {job_id}")
    if wait:
        status = wait_for_job(
            address, job_id, on_status=lambda s: err_console.print(f"{job_id}: {s}"), allow_plain_http=allow_plain_http
        )
        if status != "SUCCEEDED":
            raise typer.Exit(1)


@cluster_app.command("validate")
def validate(
    paths: list[Path] = typer.Argument(None, help="Kustomization folders or manifest files (default: cluster/)."),
) -> None:
    """Check manifests offline against the KubeRay CRDs and Kubernetes schemas, strictly (unknown fields are errors)."""
    from nerplat.cluster.validate import validate_tree  # lazy: the manifest checks, which --help does not need

    checked = validate_tree(paths or [Path("cluster")])
    for where, count in checked:
        console.print(f"ok  {where}  ({count} objects)")


def register(app: typer.Typer) -> None:
    """Adds the `cluster` command group."""
    app.add_typer(cluster_app, name="cluster")
