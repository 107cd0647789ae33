"""How MLflow's UI opens a nerplat experiment: the model-training view, runs in the order they started.

MLflow 3.17 opens an experiment in the view the browser chose last (GenAI at first, kept in the
browser's local storage) unless the URL says `workflowType=machine_learning`; earlier 3.x releases
read the experiment tag `mlflow.experimentKind` instead. nerplat sets both: the tag when it creates
the experiment, the parameter in every runs-table URL it prints. The URL also sorts the runs by
start time, oldest first (the summary run, then the arms in plan order), through the search
parameters MLflow's experiment page reads (`orderByKey`, `orderByAsc`; the others are
`searchFilter`, `startTime`, `lifecycleFilter`, `modelVersionFilter`, `datasetsFilter`).

No URL parameter selects the runs table's columns: at first it shows none of the metrics, params
or tags, and a browser keeps the columns a user picks, per experiment, in its local storage. The
only view a server can hold is a shared one: an experiment tag `mlflow.sharedViewState.<key>`
(JSON: the selected columns, their widths, the sort order), opened by `viewStateShareKey=<key>`,
under a banner saying it is a shared view whose changes are not saved. nerplat stores one,
`nerplat` (the searched hyper-parameters, the tuning metric, the headline test metric with its
mean and sd over replicates, each run's status and best-trial mark). The runs-table URL nerplat
prints leaves it out, so no banner greets a user; `nerplat ui` prints the shared view's URL
(`shared_view_url`) after it, labelled as such, and its banner's "Override saved view" keeps those
columns as the browser's own view of the experiment.

Metric cells show the stored double in full (0.46764639011633724): MLflow 3.17's runs table has
no number format, and nerplat logs no rounded copies beside its metrics.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

EXPERIMENT_KIND_TAG = "mlflow.experimentKind"
MODEL_TRAINING = "custom_model_development"  # the UI's "Machine learning" kind
SHARED_VIEW_TAG_PREFIX = "mlflow.sharedViewState."
VIEW_KEY = "nerplat"
RUNS_TABLE_PARAMETERS = "workflowType=machine_learning&orderByKey=attributes.start_time&orderByAsc=true"


def runs_table_url(server_url: str, experiment_id: str) -> str:
    """The experiment's runs table in the model-training view, oldest run first, as MLflow shows it
    to a browser (with the columns that browser chose for it, none at first)."""
    return f"{server_url.rstrip('/')}/#/experiments/{experiment_id}/runs?{RUNS_TABLE_PARAMETERS}"


def shared_view_url(server_url: str, experiment_id: str) -> str:
    """The runs table with nerplat's columns (`runs_view_tag`), under MLflow's shared-view banner."""
    return (
        f"{server_url.rstrip('/')}/#/experiments/{experiment_id}/runs"
        f"?workflowType=machine_learning&viewStateShareKey={VIEW_KEY}"
    )


def runs_view_tag(params: Sequence[str], metrics: Sequence[str], tags: Sequence[str]) -> tuple[str, str]:
    """(experiment tag key, value) of the view that shows these params, metrics and run tags as
    columns after the run names, in this order and wide enough for their names; runs in the order
    they started. (MLflow applies widths only to the columns a view orders; it keeps which runs are
    expanded out of shared views, so arm runs open closed.)"""
    columns = [f"params.`{key}`" for key in params] + [f"metrics.`{key}`" for key in metrics] + [f"tags.`{key}`" for key in tags]
    names = [*params, *metrics, *tags]
    view = {
        "selectedColumns": columns,
        "columnOrder": columns,
        "columnWidths": {column: max(110, 7 * len(name) + 40) for column, name in zip(columns, names)},
        "orderByKey": "attributes.start_time",
        "orderByAsc": True,
    }
    return f"{SHARED_VIEW_TAG_PREFIX}{VIEW_KEY}", json.dumps(view)
