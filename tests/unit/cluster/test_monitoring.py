"""cluster/base's Prometheus and Grafana: Prometheus finds the Ray pods KubeRay makes, Grafana gets the
dashboards of dashboards/grafana/ over that Prometheus.

There is no API server here, so Prometheus's Kubernetes discovery cannot run: Debian's promtool checks
the rest of the scrape configuration (Debian builds Prometheus without Kubernetes discovery, so its
promtool rejects `kubernetes_sd_configs` itself), and a real Prometheus applies the relabelling to
stand-in pods given with the labels Kubernetes discovery would give them (file-based discovery).
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from grafana_dashboards import dashboard_files
from host_load import scaled
from prometheus_server import binary, get_json, running_prometheus
from repo_paths import CLUSTER

from nerplat.cluster.kustomize import build


@pytest.fixture(scope="module")
def objects() -> dict[tuple[str, str], dict]:
    return {(m.kind, m.body["metadata"]["name"]): m.body for m in build(CLUSTER / "overlays" / "example")}


def prometheus_config(objects) -> dict:
    return yaml.safe_load(objects["ConfigMap", "nerplat-prometheus"]["data"]["prometheus.yml"])


def container(body: dict, name: str) -> dict:
    return next(c for c in body["spec"]["template"]["spec"]["containers"] if c["name"] == name)


def test_every_ray_pod_serves_metrics_on_the_port_prometheus_looks_for(objects):
    ray = objects["RayCluster", "nerplat"]["spec"]
    for group in [ray["headGroupSpec"], *ray["workerGroupSpecs"]]:
        ports = {port["name"]: port["containerPort"] for port in group["template"]["spec"]["containers"][0]["ports"]}
        assert ports["metrics"] == int(group["rayStartParams"]["metrics-export-port"])
    (job,) = prometheus_config(objects)["scrape_configs"]
    assert job["kubernetes_sd_configs"] == [{"role": "pod", "namespaces": {"own_namespace": True}}]
    rules = objects["Role", "nerplat-prometheus"]["rules"]
    assert rules == [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}]
    binding = objects["RoleBinding", "nerplat-prometheus"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "nerplat-prometheus", "namespace": "nerplat"}]
    assert objects["StatefulSet", "nerplat-prometheus"]["spec"]["template"]["spec"]["serviceAccountName"] == "nerplat-prometheus"


def test_promtool_accepts_the_scrape_configuration_apart_from_kubernetes_discovery(objects, tmp_path: Path):
    config = prometheus_config(objects)
    del config["scrape_configs"][0]["kubernetes_sd_configs"]
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config))
    command = [binary("promtool"), "check", "config", str(tmp_path / "prometheus.yml")]
    checked = subprocess.run(command, capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def stand_in_pod(address: str, port_name: str, phase: str = "Running", ray: bool = True, name: str = "p") -> dict:
    """A target as Kubernetes pod discovery describes one container port of a KubeRay pod."""
    labels = {
        "__meta_kubernetes_pod_name": name,
        "__meta_kubernetes_pod_phase": phase,
        "__meta_kubernetes_pod_container_port_name": port_name,
    }
    if ray:
        labels |= {
            "__meta_kubernetes_pod_label_ray_io_is_ray_node": "yes",
            "__meta_kubernetes_pod_label_ray_io_cluster": "nerplat-mom-conll-paper",
            "__meta_kubernetes_pod_label_ray_io_node_type": "worker",
        }
    return {"targets": [address], "labels": labels}


def test_prometheus_keeps_the_metrics_port_of_running_ray_pods_only(objects, tmp_path: Path):
    config = prometheus_config(objects)
    job = config["scrape_configs"][0]
    del job["kubernetes_sd_configs"]
    pods = [
        stand_in_pod("10.0.0.1:8080", "metrics", name="nerplat-mom-conll-paper-gpu-worker-x"),
        stand_in_pod("10.0.0.1:6379", "gcs-server"),  # another port of a Ray pod
        stand_in_pod("10.0.0.2:8080", "metrics", phase="Pending"),  # no address yet
        stand_in_pod("10.0.0.3:8080", "metrics", ray=False),  # a pod KubeRay did not make
    ]
    (tmp_path / "pods.json").write_text(json.dumps(pods))
    job["file_sd_configs"] = [{"files": [str(tmp_path / "pods.json")]}]
    with running_prometheus(config, tmp_path / "prometheus") as url:
        deadline = time.monotonic() + scaled(30)
        while not (targets := get_json(f"{url}/api/v1/targets")["data"])["droppedTargets"]:
            assert time.monotonic() < deadline, "Prometheus read no targets"
            time.sleep(0.2)
    (kept,) = targets["activeTargets"]
    assert kept["scrapeUrl"] == "http://10.0.0.1:8080/metrics"
    labels = kept["labels"]
    assert (labels["pod"], labels["ray_io_cluster"], labels["ray_node_type"]) == (
        "nerplat-mom-conll-paper-gpu-worker-x",
        "nerplat-mom-conll-paper",
        "worker",
    )
    assert len(targets["droppedTargets"]) == 3


def test_grafana_reads_the_repositorys_dashboards_from_the_prometheus_service(objects):
    grafana = objects["Deployment", "nerplat-grafana"]["spec"]["template"]["spec"]
    main = container(objects["Deployment", "nerplat-grafana"], "grafana")
    mounts = {mount["name"]: mount["mountPath"] for mount in main["volumeMounts"]}
    volumes = {volume["name"]: volume for volume in grafana["volumes"]}
    dashboards = objects["ConfigMap", volumes["dashboards"]["configMap"]["name"]]["data"]
    assert dashboards == {path.name: path.read_text(encoding="utf-8") for path in dashboard_files()}

    provisioning = objects["ConfigMap", volumes["provisioning"]["configMap"]["name"]]["data"]
    paths = {item["key"]: item["path"] for item in volumes["provisioning"]["configMap"]["items"]}
    env = {entry["name"]: entry for entry in main["env"]}
    assert env["GF_PATHS_PROVISIONING"]["value"] == mounts["provisioning"]
    assert paths == {"datasources.yaml": "datasources/nerplat.yaml", "dashboards.yaml": "dashboards/nerplat.yaml"}
    (provider,) = yaml.safe_load(provisioning["dashboards.yaml"])["providers"]
    assert provider["options"]["path"] == mounts["dashboards"]
    assert Path(env["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]["value"]).parent == Path(mounts["dashboards"])
    assert Path(env["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]["value"]).name in dashboards

    (source,) = yaml.safe_load(provisioning["datasources.yaml"])["datasources"]
    service = objects["Service", "nerplat-prometheus"]["spec"]
    prometheus_url = f"http://nerplat-prometheus:{service['ports'][0]['port']}"
    assert (source["type"], source["url"], source["isDefault"]) == ("prometheus", prometheus_url, True)
    assert env["GF_SECURITY_ADMIN_PASSWORD"]["valueFrom"]["secretKeyRef"] == {"name": "nerplat-grafana", "key": "admin-password"}
    assert env["GF_AUTH_ANONYMOUS_ENABLED"]["value"] == "false"


def test_monitoring_pods_are_not_admitted_to_mlflow(objects):
    """networkpolicy.yaml admits pods labelled part-of nerplat to MLflow; Prometheus and Grafana need no access."""
    for kind, name in (("StatefulSet", "nerplat-prometheus"), ("Deployment", "nerplat-grafana")):
        assert "app.kubernetes.io/part-of" not in objects[kind, name]["spec"]["template"]["metadata"]["labels"]
