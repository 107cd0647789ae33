"""cluster/base's Prometheus and Grafana: Prometheus finds the Ray pods KubeRay makes, Grafana gets the
dashboards of dashboards/grafana/ over that Prometheus. That promtool accepts the scrape configuration
and a real Prometheus keeps the right pods is tests/integration/cluster/test_monitoring.py's (Debian's
prometheus package, which `make test` installs).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from example_cluster import example_objects, prometheus_config
from grafana_dashboards import dashboard_files


@pytest.fixture(scope="module")
def objects() -> dict[tuple[str, str], dict]:
    return example_objects()


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
