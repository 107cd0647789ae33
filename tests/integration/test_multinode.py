"""`nerplat run --address` on a real three-node Ray cluster on 127.0.0.1 (head + two workers).

The workers advertise a custom resource standing in for GPUs; the spec's trials require it, so
they must run on the workers, never on the head. One worker node is stopped mid-run: its trials
are retried on the other (from their checkpoints in the shared storage) and MLflow still holds
every run exactly once.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import pytest
from host_load import scaled
from nerplat_processes import SPEC, finish, nerplat, runs, runs_so_far
from ray_nodes import LocalRayCluster, three_node_cluster

from nerplat.track import schema

pytestmark = pytest.mark.slow


@pytest.fixture
def cluster(tmp_path: Path):
    with three_node_cluster(tmp_path) as nodes:
        yield nodes


def test_trials_run_on_worker_nodes_and_survive_a_node_stop(cluster: LocalRayCluster, tmp_path: Path):
    spec = tmp_path / "multinode.yaml"
    spec.write_text(
        SPEC.read_text()
        .replace("${NERPLAT_TEST_EXPERIMENT:-tiny_run}", "multinode")
        .replace("epochs: 2", "epochs: 4")
        .replace("  mom: {loss: mom, lambda: {uniform: [0.0, 1.0]}}\n", "")
        .replace("tune: {search: tpe, scheduler: asha, num_samples: 3, max_concurrent: 2}\n", "")
        .replace("replicate: {seeds: 1, partitions: 2}", "replicate: {seeds: 2, partitions: 2}")
        + "resources: {cpus_per_worker: 1, custom: {fake_gpu: 1}, max_retries: 3}\n"
    )
    shared = tmp_path / "shared-storage"
    driver = nerplat(
        "run", str(spec), "--address", cluster.address, "--storage", str(shared), "--no-analyze",
        workdir=tmp_path, env=cluster.env(),
    )  # fmt: skip
    stopped = False
    deadline = time.monotonic() + scaled(300)
    while not stopped and time.monotonic() < deadline:
        time.sleep(1)
        assert driver.poll() is None, driver.communicate()[0]
        on_worker_2 = [
            r for r in runs_so_far(tmp_path, "multinode")
            if r.data.tags.get(schema.RAY_NODE) == "worker-2" and r.info.status == "RUNNING"
        ]  # fmt: skip
        if on_worker_2:
            cluster.stop_node("worker-2")
            stopped = True
    assert stopped, "no trial ran on worker-2 within 300 s"
    code, output = finish(driver)
    assert code == 0, output

    all_runs = runs(tmp_path, "multinode")
    assert max(Counter(r.data.tags[schema.RUN_KEY] for r in all_runs).values()) == 1
    replicates = [r for r in all_runs if r.data.tags[schema.KIND] == "replicate"]
    assert len(replicates) == 4
    assert all(r.data.tags[schema.STATUS] == "completed" for r in replicates)
    nodes = {r.data.tags[schema.RAY_NODE] for r in replicates}
    assert nodes <= {"worker-1", "worker-2"} and "head" not in nodes
