"""What cluster/ deploys is locked down (issue 11, item 15): MLflow behind basic auth and
NetworkPolicies, Prometheus reachable from Grafana only, every pod non-root without privilege
escalation or capabilities."""

from __future__ import annotations

import configparser
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlparse

import pytest
from repo_paths import CLUSTER

from nerplat.catalog import spec_catalog
from nerplat.cluster.kustomize import build
from nerplat.cluster.rayjob_manifest import load_sizing, render_rayjob

READ_ONLY_ROOT = {"mlflow", "postgres", "prometheus", "grafana"}  # containers whose every write goes to a mounted volume


@pytest.fixture(scope="module")
def objects() -> dict[tuple[str, str], dict]:
    return {(m.kind, m.body["metadata"]["name"]): m.body for m in build(CLUSTER / "overlays" / "example")}


def pod_specs(body: dict) -> Iterator[dict]:
    """Every pod template of a workload: Deployments, StatefulSets, RayCluster/RayJob head and workers."""
    spec = body.get("spec", {})
    if "template" in spec:
        yield spec["template"]["spec"]
    cluster = spec.get("rayClusterSpec", spec) if body["kind"] in ("RayCluster", "RayJob") else {}
    if "headGroupSpec" in cluster:
        yield cluster["headGroupSpec"]["template"]["spec"]
        yield from (group["template"]["spec"] for group in cluster.get("workerGroupSpecs", []))


def check_pod(pod: dict, where: str) -> None:
    pod_context = pod.get("securityContext", {})
    assert pod_context.get("seccompProfile", {}).get("type") == "RuntimeDefault", where
    for container in pod["containers"] + pod.get("initContainers", []):
        context = {**pod_context, **container.get("securityContext", {})}
        name = f"{where}/{container['name']}"
        assert context.get("runAsNonRoot") is True and context.get("runAsUser", 0) > 0, name
        assert context.get("allowPrivilegeEscalation") is False, name
        assert context.get("capabilities", {}).get("drop") == ["ALL"] and not context["capabilities"].get("add"), name
        if container["name"] in READ_ONLY_ROOT:
            assert context.get("readOnlyRootFilesystem") is True, name


def test_every_pod_runs_as_non_root_without_privilege_escalation_or_capabilities(objects):
    workloads = [(key, body) for key, body in objects.items() if key[0] in ("Deployment", "StatefulSet", "RayCluster")]
    assert {key[0] for key, _ in workloads} == {"Deployment", "StatefulSet", "RayCluster"}
    for key, body in workloads:
        pods = list(pod_specs(body))
        assert pods, key
        for pod in pods:
            check_pod(pod, f"{key[0]} {key[1]}")


def test_a_rendered_rayjob_keeps_the_locked_down_pods(spec_repo: Path, monkeypatch):
    monkeypatch.chdir(spec_repo)
    spec = Path("specs/tiny.yaml")
    sizing = load_sizing(spec, spec_catalog(spec), "paper")
    rayjob = render_rayjob(spec, sizing, profile="paper", image=None, cluster_dir=CLUSTER / "overlays" / "example")
    pods = list(pod_specs(rayjob))
    assert len(pods) == 2
    for pod in pods:
        check_pod(pod, "RayJob")


def _container(body: dict, name: str) -> dict:
    return next(c for c in body["spec"]["template"]["spec"]["containers"] if c["name"] == name)


def _env(container: dict) -> dict[str, dict]:
    return {entry["name"]: entry for entry in container.get("env", [])}


def test_mlflow_runs_the_basic_auth_app_with_credentials_from_a_secret(objects):
    mlflow = _container(objects["Deployment", "nerplat-mlflow"], "mlflow")
    assert "--app-name=basic-auth" in mlflow["args"]
    env = _env(mlflow)
    for name in ("MLFLOW_AUTH_ADMIN_USERNAME", "MLFLOW_AUTH_ADMIN_PASSWORD", "PGPASSWORD", "MLFLOW_FLASK_SERVER_SECRET_KEY"):
        assert "value" not in env[name] and env[name]["valueFrom"]["secretKeyRef"]["name"].startswith("nerplat-"), name
    config_path = Path(env["MLFLOW_AUTH_CONFIG_PATH"]["value"])
    mounts = {m["mountPath"]: m["name"] for m in mlflow["volumeMounts"]}
    volume = next(v for v in objects["Deployment", "nerplat-mlflow"]["spec"]["template"]["spec"]["volumes"]
                  if v["name"] == mounts[str(config_path.parent)])
    ini = objects["ConfigMap", volume["configMap"]["name"]]["data"][config_path.name]
    config = configparser.ConfigParser()
    config.read_string(ini)
    # users live in PostgreSQL (the root filesystem is read-only); the password comes from PGPASSWORD
    assert config["mlflow"]["database_uri"].startswith("postgresql://mlflow@nerplat-postgres")
    assert "admin_password" not in config["mlflow"]


def test_ray_pods_log_to_mlflow_with_the_same_credentials(objects):
    ray = objects["RayCluster", "nerplat"]["spec"]
    for pod in [ray["headGroupSpec"]["template"]["spec"], *(g["template"]["spec"] for g in ray["workerGroupSpecs"])]:
        secrets = {source["secretRef"]["name"] for source in pod["containers"][0]["envFrom"] if "secretRef" in source}
        assert "nerplat-mlflow-auth" in secrets


def _policy_for(objects: dict, app: str) -> dict:
    policies = [body for (kind, _), body in objects.items() if kind == "NetworkPolicy"
                and body["spec"]["podSelector"].get("matchLabels", {}).get("app.kubernetes.io/name") == app]
    assert len(policies) == 1, app
    return policies[0]["spec"]


@pytest.mark.parametrize(("app", "port", "allowed"), [
    ("nerplat-mlflow", 5000, [{"app.kubernetes.io/part-of": "nerplat"}]),
    (
        "nerplat-postgres",
        5432,
        [{"app.kubernetes.io/name": "nerplat-mlflow"}, {"app.kubernetes.io/part-of": "nerplat", "ray.io/node-type": "head"}],
    ),
    ("nerplat-prometheus", 9090, [{"app.kubernetes.io/name": "nerplat-grafana"}]),
])
def test_network_policies_admit_only_nerplat_pods(objects, app, port, allowed):
    policy = _policy_for(objects, app)
    assert policy["policyTypes"] == ["Ingress"]
    (rule,) = policy["ingress"]
    assert [p["port"] for p in rule["ports"]] == [port]
    assert rule["from"] == [{"podSelector": {"matchLabels": labels}} for labels in allowed]


def test_the_optuna_studies_live_in_a_postgresql_database_of_their_own_with_a_password_from_a_secret(objects):
    url = urlparse(objects["ConfigMap", "nerplat-settings"]["data"]["NERPLAT_OPTUNA_STORAGE"])
    service = objects["Service", "nerplat-postgres"]
    expected = ("postgresql", service["metadata"]["name"], service["spec"]["ports"][0]["port"])
    assert (url.scheme, url.hostname, url.port) == expected
    assert url.username == "optuna" and url.password is None and url.path == "/optuna"
    # the database and role are created by PostgreSQL's init script, with the password the driver logs in with
    postgres = _container(objects["StatefulSet", "nerplat-postgres"], "postgres")
    assert _env(postgres)["OPTUNA_PASSWORD"]["valueFrom"]["secretKeyRef"] == {"name": "nerplat-optuna", "key": "PGPASSWORD"}
    script = objects["ConfigMap", "nerplat-postgres-init"]["data"]["optuna.sh"]
    assert "CREATE ROLE optuna LOGIN PASSWORD :'password'" in script and "CREATE DATABASE optuna OWNER optuna" in script
    assert {m["mountPath"]: m["name"] for m in postgres["volumeMounts"]}["/docker-entrypoint-initdb.d"] == "init"
    # only the Ray head, where the driver runs, has that password
    ray = objects["RayCluster", "nerplat"]["spec"]
    head, *workers = [ray["headGroupSpec"]["template"]["spec"], *(g["template"]["spec"] for g in ray["workerGroupSpecs"])]
    secrets = [{s["secretRef"]["name"] for s in pod["containers"][0]["envFrom"] if "secretRef" in s} for pod in (head, *workers)]
    assert "nerplat-optuna" in secrets[0] and all("nerplat-optuna" not in found for found in secrets[1:])


def test_mlflow_listens_on_every_interface_only_behind_its_network_policy(objects):
    mlflow = _container(objects["Deployment", "nerplat-mlflow"], "mlflow")
    if "--host=0.0.0.0" in mlflow["args"]:
        _policy_for(objects, "nerplat-mlflow")
