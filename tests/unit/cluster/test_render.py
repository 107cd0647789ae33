import json
import shlex
import subprocess
from pathlib import Path

import pytest
from repo_paths import CLUSTER

from nerplat.catalog import spec_catalog
from nerplat.cluster import kustomize
from nerplat.cluster.manifests import Manifest
from nerplat.cluster.rayjob_manifest import STORAGE_ENV, JobSizing, job_name, load_sizing, render_rayjob
from nerplat.cluster.validate import validate_manifests
from nerplat.config.experiment import Resources
from nerplat.errors import UserInputError

OVERLAY = CLUSTER / "overlays" / "example"


def render(spec_repo: Path, profile=None, **options) -> dict:
    spec = spec_repo / "specs" / "tiny.yaml"
    options.setdefault("cluster_dir", OVERLAY)
    return render_rayjob(spec, load_sizing(spec, spec_catalog(spec), profile), profile=profile, repo_root=spec_repo, **options)


def worker_group(rayjob: dict) -> dict:
    (group,) = rayjob["spec"]["rayClusterSpec"]["workerGroupSpecs"]
    return group


def test_rendered_rayjob_validates_strictly(spec_repo: Path):
    for profile in (None, "paper", "cpu"):
        validate_manifests([Manifest(render(spec_repo, profile))])


def shell_words(entrypoint: str, env: dict[str, str]) -> list[str]:
    """The argv a shell gives the entrypoint's program (Ray runs entrypoints through a shell)."""
    script = f"set -- {entrypoint}; printf '%s\\n' \"$@\""
    return subprocess.run(["sh", "-c", script], env=env, capture_output=True, text=True, check=True).stdout.splitlines()


def test_entrypoint_runs_the_spec_from_the_image_with_its_profile_and_shared_storage(spec_repo: Path):
    rayjob = render(spec_repo, "paper")
    assert shell_words(rayjob["spec"]["entrypoint"], {"NERPLAT_RAY_STORAGE": "s3://b/ray"}) == [
        "nerplat", "run", "specs/tiny.yaml", "--profile", "paper", "--storage", "s3://b/ray",
    ]  # fmt: skip
    settings = {(m.kind, m.name): m.body for m in kustomize.build(OVERLAY)}[("ConfigMap", "nerplat-settings")]
    assert STORAGE_ENV in settings["data"]
    assert rayjob["metadata"]["name"] == "nerplat-tiny-conll-paper"
    assert rayjob["metadata"]["namespace"] == "nerplat"
    assert rayjob["spec"]["shutdownAfterJobFinishes"] is True
    assert render(spec_repo)["spec"]["entrypoint"].startswith("nerplat run specs/tiny.yaml --storage ")


def test_worker_pods_are_sized_from_the_spec_resources(spec_repo: Path):
    group = worker_group(render(spec_repo))  # workers 2, 3 CPUs and 1 GPU each, 3 trials at once
    container = group["template"]["spec"]["containers"][0]
    assert container["resources"]["limits"]["cpu"] == container["resources"]["requests"]["cpu"] == "4"
    assert container["resources"]["limits"]["nvidia.com/gpu"] == "1"
    assert (group["minReplicas"], group["maxReplicas"]) == (0, 6)
    # KubeRay pastes rayStartParams into a shell command: what `ray start` finally receives is JSON.
    argument = shlex.split(f"ray start --resources={group['rayStartParams']['resources']}")[-1]
    assert json.loads(argument.split("=", 1)[1]) == {"accelerator_type:A100": 0.01}


def test_fractional_gpus_round_up_per_pod_and_cpu_specs_get_no_gpu(spec_repo: Path):
    paper = worker_group(render(spec_repo, "paper"))["template"]["spec"]["containers"][0]
    assert paper["resources"]["limits"]["nvidia.com/gpu"] == "1"  # 0.5 per worker, but a pod cannot hold half a GPU
    cpu = worker_group(render(spec_repo, "cpu"))
    limits = cpu["template"]["spec"]["containers"][0]["resources"]["limits"]
    assert "nvidia.com/gpu" not in limits and limits["cpu"] == "3"
    assert "resources" not in cpu["rayStartParams"]
    assert cpu["maxReplicas"] == 4  # no concurrency limit: the overlay's budget stands


def test_head_and_autoscaling_come_from_the_raycluster(spec_repo: Path):
    cluster_spec = render(spec_repo)["spec"]["rayClusterSpec"]
    (raycluster,) = [m for m in kustomize.build(OVERLAY) if m.kind == "RayCluster"]
    assert cluster_spec["headGroupSpec"] == raycluster.body["spec"]["headGroupSpec"]
    assert cluster_spec["enableInTreeAutoscaling"] is True
    assert cluster_spec["authOptions"] == {"mode": "token", "secretName": "nerplat-ray-token"}
    head = cluster_spec["headGroupSpec"]["template"]["spec"]["containers"][0]
    assert "nvidia.com/gpu" not in head["resources"]["limits"]


def test_pods_reach_mlflow_and_s3_through_configmap_and_secret_never_inline(spec_repo: Path):
    rayjob = render(spec_repo)
    objects = {(m.kind, m.name): m.body for m in kustomize.build(OVERLAY)}
    settings = objects[("ConfigMap", "nerplat-settings")]["data"]
    service = objects[("Service", "nerplat-mlflow")]
    assert settings["MLFLOW_TRACKING_URI"] == f"http://{service['metadata']['name']}:{service['spec']['ports'][0]['port']}"
    assert settings["NERPLAT_RAY_STORAGE"].startswith("s3://")
    cluster_spec = rayjob["spec"]["rayClusterSpec"]
    for group in [cluster_spec["headGroupSpec"], *cluster_spec["workerGroupSpecs"]]:
        container = group["template"]["spec"]["containers"][0]
        assert {"configMapRef": {"name": "nerplat-settings"}} in container["envFrom"]
        assert {"secretRef": {"name": "nerplat-s3"}} in container["envFrom"]
        assert "env" not in container  # nothing secret (or otherwise) written into the job
    assert not [key for key in objects if key[0] == "Secret"]
    assert "AWS_SECRET_ACCESS_KEY" not in json.dumps(settings)


def test_image_flag_replaces_every_ray_image(spec_repo: Path):
    cluster_spec = render(spec_repo, image="r.io/nerplat:7")["spec"]["rayClusterSpec"]
    groups = [cluster_spec["headGroupSpec"], *cluster_spec["workerGroupSpecs"]]
    assert {g["template"]["spec"]["containers"][0]["image"] for g in groups} == {"r.io/nerplat:7"}


def test_base_placeholder_image_is_refused_without_image_flag(spec_repo: Path):
    with pytest.raises(UserInputError, match="placeholder image 'nerplat'"):
        render(spec_repo, cluster_dir=CLUSTER / "base")
    assert "namespace" not in render(spec_repo, cluster_dir=CLUSTER / "base", image="r.io/n:1")["metadata"]


def test_spec_outside_specs_folder_is_refused(spec_repo: Path):
    elsewhere = spec_repo / "tiny.yaml"
    elsewhere.write_text((spec_repo / "specs" / "tiny.yaml").read_text())
    with pytest.raises(UserInputError, match="holds only the repository's specs/"):
        render_rayjob(elsewhere, load_sizing(elsewhere, spec_catalog(elsewhere), None), cluster_dir=OVERLAY, repo_root=spec_repo)


def test_bad_resources_are_reported_at_their_yaml_path(spec_repo: Path):
    spec = spec_repo / "specs" / "tiny.yaml"
    spec.write_text(spec.read_text().replace("workers: 2,", "workers: 0,"))
    with pytest.raises(UserInputError) as caught:
        load_sizing(spec, spec_catalog(spec), None)
    (problem,) = caught.value.problems
    assert problem.path == "resources.workers" and problem.line == 6


def test_unknown_profile_is_a_user_error(spec_repo: Path):
    spec = spec_repo / "specs" / "tiny.yaml"
    with pytest.raises(UserInputError, match="profile"):
        load_sizing(spec, spec_catalog(spec), "gpu")


def test_job_names_are_valid_kubernetes_names():
    assert job_name("MoM_CoNLL 2003", "paper") == "nerplat-mom-conll-2003-paper"
    long = job_name("x" * 100, None)
    assert len(long) <= 40 and long.startswith("nerplat-x")


def test_worker_count_beyond_the_budget_raises_max_replicas(spec_repo: Path):
    sizing = JobSizing("big", Resources(workers=8, cpus_per_worker=1), None)
    rayjob = render_rayjob(spec_repo / "specs" / "tiny.yaml", sizing, cluster_dir=OVERLAY, repo_root=spec_repo)
    assert worker_group(rayjob)["maxReplicas"] == 8


def test_every_repository_spec_and_profile_renders_a_valid_rayjob():
    from repo_paths import REPO

    from nerplat.spec.loader import read_document
    from nerplat.spec.profiles import profile_names

    specs = sorted((REPO / "specs").glob("*.yaml"))
    assert specs, "no specs/ in the repository"
    for spec in specs:
        for profile in [None, *profile_names(read_document(spec)[0])]:
            sizing = load_sizing(spec, spec_catalog(spec), profile)
            rayjob = render_rayjob(spec, sizing, profile=profile, cluster_dir=OVERLAY, repo_root=REPO)
            validate_manifests([Manifest(rayjob, f"{spec.name} --profile {profile}")])
