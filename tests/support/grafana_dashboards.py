"""The Grafana dashboards in dashboards/grafana/, read as data: their panels' PromQL and its variables."""

from __future__ import annotations

import json
import re
from pathlib import Path

from repo_paths import GRAFANA_DASHBOARDS

METRIC_NAME = re.compile(r"\b(ray_[a-zA-Z0-9_]+)\b")
VARIABLE = re.compile(r"\$(\w+)|\$\{(\w+)\}")


def dashboard_files() -> list[Path]:
    return sorted(GRAFANA_DASHBOARDS.glob("*.json"))


def load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def queries(dashboard: dict) -> list[tuple[str, str]]:
    """(panel title, PromQL) of every target of every panel."""
    return [(panel["title"], target["expr"]) for panel in dashboard["panels"] for target in panel.get("targets", [])]


def targets(dashboard: dict) -> list[tuple[str, dict]]:
    """(panel title, target) of every target of every panel."""
    return [(panel["title"], target) for panel in dashboard["panels"] for target in panel.get("targets", [])]


def labels_used(target: dict) -> set[str]:
    """Labels a target's query selects or groups by, and its legend shows."""
    expr = target["expr"]
    selected = {label for selector in re.findall(r"\{([^}]*)\}", expr) for label in re.findall(r"(\w+)\s*[=!~]", selector)}
    grouped = {label.strip() for clause in re.findall(r"\bby \(([^)]*)\)", expr) for label in clause.split(",")}
    return selected | grouped | set(re.findall(r"\{\{\s*(\w+)\s*\}\}", target.get("legendFormat", "")))


def metric_names(expr: str) -> set[str]:
    return set(METRIC_NAME.findall(expr))


def variables(expr: str) -> set[str]:
    return {a or b for a, b in VARIABLE.findall(expr)}


def with_variables(expr: str, values: dict[str, str]) -> str:
    """The query as Grafana sends it, with each `$name` replaced by `values[name]`."""
    return VARIABLE.sub(lambda match: values[match.group(1) or match.group(2)], expr)
