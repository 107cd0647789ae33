"""Edits of runs that already exist, and the search of an experiment's active runs: the batched
params and tags the ledger adds to a run, and the runs it reads back on a resume.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

SEARCH_LIMIT = 50_000  # runs in one search: the most the SQLite store returns at once


def active_runs(client: Any, experiment_id: str, filter_string: str) -> list[Any]:
    """The experiment's runs that match `filter_string`, leaving out deleted ones."""
    from mlflow.entities import ViewType

    return client.search_runs([experiment_id], filter_string=filter_string, run_view_type=ViewType.ACTIVE_ONLY, max_results=SEARCH_LIMIT)


def log_params(client: Any, run_id: str, params: Mapping[str, str]) -> None:
    """`params` on the run in one batch."""
    from mlflow.entities import Param

    client.log_batch(run_id, params=[Param(key, text) for key, text in params.items()])


def log_tags(client: Any, run_id: str, tags: Mapping[str, str]) -> None:
    """`tags` on the run in one batch."""
    from mlflow.entities import RunTag

    client.log_batch(run_id, tags=[RunTag(tag, value) for tag, value in tags.items()])
