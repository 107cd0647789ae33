"""A scratch experiment filled with made-up runs, for benchmarks that time reading runs back.

An interrupted fill resumes where it stopped; a full one is recognised by an experiment tag and
left as it is, so a benchmark can keep its store between invocations.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping


def fill_experiment(
    tracking_uri: str,
    experiment_name: str,
    count: int,
    runs: Callable[[], Iterable[tuple[Mapping[str, str], Mapping[str, float]]]],
    *,
    filled_tag: str,
    log: Callable[[str], None],
) -> str:
    """The id of `experiment_name` holding `count` runs, each (tags, metrics) of `runs()`, named
    `bench-<index>`; `filled_tag` on the experiment records that it holds them all."""
    from mlflow import MlflowClient
    from mlflow.entities import Metric

    client = MlflowClient(tracking_uri)
    experiment = client.get_experiment_by_name(experiment_name)
    if experiment and experiment.tags.get(filled_tag) == str(count):
        return experiment.experiment_id
    experiment_id = experiment.experiment_id if experiment else client.create_experiment(experiment_name)
    existing = len(client.search_runs([experiment_id], max_results=count))  # an interrupted fill resumes
    now = int(time.time() * 1000)
    for index, (tags, metrics) in enumerate(runs()):
        if index < existing:
            continue
        run = client.create_run(experiment_id, tags=dict(tags), run_name=f"bench-{index}")
        client.log_batch(run.info.run_id, metrics=[Metric(name, value, now, 0) for name, value in metrics.items()])
        if (index + 1) % 500 == 0:
            log(f"  {index + 1}/{count} runs logged")
    client.set_experiment_tag(experiment_id, filled_tag, str(count))
    return experiment_id
