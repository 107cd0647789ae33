"""How MLflow's UI opens a nerplat experiment: the model-training view, with the columns that matter.

MLflow 3.17 opens an experiment in the view the browser chose last (GenAI at first, kept in the
browser's local storage) unless the URL says `workflowType=machine_learning`; earlier 3.x releases
read the experiment tag `mlflow.experimentKind` instead. nerplat sets both: the tag when it creates
the experiment, the parameter in every runs-table URL it prints.

The runs table shows only the columns a browser selected, at first none of the metrics, params or
tags. A URL with `viewStateShareKey=<key>` opens the view stored in the experiment tag
`mlflow.sharedViewState.<key>` (JSON: the selected columns, their widths, the sort order) instead;
MLflow then says it is showing a shared view. nerplat stores one, `nerplat`: the searched
hyper-parameters, the tuning metric, the headline test metric with its mean and sd over
replicates, and each run's status and best-trial mark.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

EXPERIMENT_KIND_TAG = "mlflow.experimentKind"
MODEL_TRAINING = "custom_model_development"  # the UI's "Machine learning" kind
SHARED_VIEW_TAG_PREFIX = "mlflow.sharedViewState."
VIEW_KEY = "nerplat"
WORKFLOW_PARAMETER = "workflowType=machine_learning"


def runs_table_url(server_url: str, experiment_id: str) -> str:
    """The experiment's runs table in the model-training view, with nerplat's columns."""
    return f"{server_url.rstrip('/')}/#/experiments/{experiment_id}/runs?{WORKFLOW_PARAMETER}&viewStateShareKey={VIEW_KEY}"


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
