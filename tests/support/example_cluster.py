"""The example overlay (cluster/overlays/example) as the cluster tests read it, built offline."""

from __future__ import annotations

import yaml
from repo_paths import CLUSTER

from nerplat.cluster.kustomize import build


def example_objects() -> dict[tuple[str, str], dict]:
    """(kind, name) -> body of every object the example overlay builds."""
    return {(m.kind, m.body["metadata"]["name"]): m.body for m in build(CLUSTER / "overlays" / "example")}


def prometheus_config(objects: dict[tuple[str, str], dict]) -> dict:
    """The prometheus.yml its Prometheus reads, as data."""
    return yaml.safe_load(objects["ConfigMap", "nerplat-prometheus"]["data"]["prometheus.yml"])
