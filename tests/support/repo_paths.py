"""Folders of the repository that tests read."""

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CLUSTER = REPO / "cluster"
GRAFANA_DASHBOARDS = REPO / "dashboards" / "grafana"
