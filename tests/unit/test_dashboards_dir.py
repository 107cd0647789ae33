"""The Grafana dashboards in dashboards/grafana/ query only metrics that exist, with variables they define.

nerplat's metrics must be defined in `nerplat.run.exported_metrics` (with the tags the queries use);
Ray's must appear in the installed Ray's own Grafana dashboards (its dashboard factory's panels), so
a Ray upgrade that renames one fails here. That the queries parse and return data is checked against
a real Prometheus in tests/integration/test_metrics_export.py.
"""

from __future__ import annotations

import pytest
from grafana_dashboards import dashboard_files, labels_used, load, metric_names, queries, targets, variables

from nerplat.run.exported_metrics import DEFINITIONS

DASHBOARDS = dashboard_files()
NERPLAT = {definition.exported_name: definition for definition in DEFINITIONS}
GRAFANA_VARIABLES = {"__range", "__rate_interval", "__interval"}


def ray_dashboard_queries() -> str:
    """Every PromQL query of the Grafana dashboards the installed Ray generates."""
    from ray.dashboard.modules.metrics.dashboards import default_dashboard_panels

    config = default_dashboard_panels.default_dashboard_config
    panels = [*config.panels, *(panel for row in config.rows for panel in row.panels)]
    return "\n".join(target.expr for panel in panels for target in panel.targets)


def test_the_two_dashboards_are_there_with_distinct_uids():
    names = [path.name for path in DASHBOARDS]
    assert names == ["nerplat-trials.json", "nerplat-workers.json"]
    assert len({load(path)["uid"] for path in DASHBOARDS}) == 2


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: p.name)
def test_every_query_names_a_defined_metric_and_only_defined_variables(path):
    dashboard = load(path)
    defined = {variable["name"] for variable in dashboard["templating"]["list"]}
    ray_queries = ray_dashboard_queries()
    for title, target in targets(dashboard):
        expr = target["expr"]
        names = metric_names(expr)
        assert names, f"{title}: {expr}"
        for name in names:
            if name.startswith("ray_nerplat_"):
                assert name in NERPLAT, f"{title}: {name} is not in nerplat.run.exported_metrics.DEFINITIONS"
            else:
                assert name in ray_queries, f"{title}: {name} is not a metric the installed Ray's dashboards query"
        if all(name in NERPLAT for name in names):
            tags = set.intersection(*(set(NERPLAT[name].tags) for name in names))
            assert labels_used(target) <= tags, f"{title}: no tag(s) {labels_used(target) - tags} on {names}"
        assert variables(expr) <= defined | GRAFANA_VARIABLES, f"{title}: {expr}"


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: p.name)
def test_panels_are_placed_once_and_read_from_the_chosen_prometheus(path):
    dashboard = load(path)
    panels = dashboard["panels"]
    assert len({panel["id"] for panel in panels}) == len(panels)
    cells = [(x, y) for panel in panels for x in range(panel["gridPos"]["x"], panel["gridPos"]["x"] + panel["gridPos"]["w"])
             for y in range(panel["gridPos"]["y"], panel["gridPos"]["y"] + panel["gridPos"]["h"])]
    assert len(cells) == len(set(cells)), "panels overlap"
    assert all(panel["gridPos"]["x"] + panel["gridPos"]["w"] <= 24 for panel in panels)
    sources = [panel["datasource"] for panel in panels] + [t["datasource"] for panel in panels for t in panel["targets"]]
    assert all(source == {"type": "prometheus", "uid": "${datasource}"} for source in sources)
    datasource = next(v for v in dashboard["templating"]["list"] if v["name"] == "datasource")
    assert (datasource["type"], datasource["query"]) == ("datasource", "prometheus")
    assert all(panel["title"] and panel["description"] for panel in panels)


def test_every_nerplat_metric_is_on_a_dashboard():
    queried = {name for path in DASHBOARDS for _, expr in queries(load(path)) for name in metric_names(expr)}
    assert set(NERPLAT) <= queried


def test_gpu_use_per_worker_comes_from_rays_node_gpu_metrics():
    workers = load(next(path for path in DASHBOARDS if path.name == "nerplat-workers.json"))
    queried = {name for _, expr in queries(workers) for name in metric_names(expr)}
    assert {"ray_node_gpus_utilization", "ray_node_gram_used", "ray_node_gram_available"} <= queried
