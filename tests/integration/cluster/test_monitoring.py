"""cluster/base's Prometheus, run for real (Debian's prometheus package, which `make test` installs).

There is no API server here, so Prometheus's Kubernetes discovery cannot run: Debian's promtool checks
the rest of the scrape configuration (Debian builds Prometheus without Kubernetes discovery, so its
promtool rejects `kubernetes_sd_configs` itself), and a real Prometheus applies the relabelling to
stand-in pods given with the labels Kubernetes discovery would give them (file-based discovery). What
the manifests say without running Prometheus is tests/unit/cluster/test_monitoring.py's.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from example_cluster import example_objects, prometheus_config
from host_load import scaled
from prometheus_server import binary, get_json, running_prometheus

pytestmark = pytest.mark.slow  # needs a system package, prometheus, which `make test` installs


@pytest.fixture(scope="module")
def objects() -> dict[tuple[str, str], dict]:
    return example_objects()


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
