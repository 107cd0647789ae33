"""The example plugin (examples/plugin: a loss, a sampler and a corpus format) on a real three-node
Ray cluster on 127.0.0.1.

The plugin folder is on no node's PYTHONPATH, and the trials need a resource only the two worker
nodes have: they can build `smoothed_ce`, `first_n` and `word_slash` only if the driver's runtime
environment shipped the folder (py_modules) and its worker hook imported it. The summary run records
the plugin's files with their sha256. Kept small: the tiny encoder, three training sentences, two runs.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from nerplat_processes import finish, nerplat, runs
from ray_nodes import LocalRayCluster, three_node_cluster

from nerplat.track import schema

pytestmark = pytest.mark.slow

EXAMPLE_SPEC = Path(__file__).parents[2] / "examples" / "plugin" / "spec.yaml"


@pytest.fixture
def cluster(tmp_path: Path):
    with three_node_cluster(tmp_path) as nodes:
        yield nodes


def test_the_example_plugin_runs_on_the_worker_nodes(cluster: LocalRayCluster, tmp_path: Path):
    driver = nerplat(
        "run", str(EXAMPLE_SPEC), "--address", cluster.address, "--storage", str(tmp_path / "shared-storage"),
        "--no-analyze", "--set", "resources.custom.fake_gpu=1", "--set", "resources.cpus_per_worker=1",
        workdir=tmp_path, env=cluster.env(),
    )  # fmt: skip
    code, output = finish(driver, timeout=900)
    assert code == 0, output

    all_runs = runs(tmp_path, "plugin_example")
    replicates = [r for r in all_runs if r.data.tags[schema.KIND] == "replicate"]
    assert len(replicates) == 2 and all(r.data.tags[schema.STATUS] == "completed" for r in replicates)
    assert {r.data.tags[schema.RAY_NODE] for r in replicates} <= {"worker-1", "worker-2"}
    assert sorted(r.data.params["objective"] for r in replicates) == ["ce", "smoothed_ce"]

    (summary,) = [r for r in all_runs if r.data.tags[schema.KIND] == "summary"]
    from mlflow import MlflowClient

    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    record = json.loads(Path(client.download_artifacts(summary.info.run_id, "plugins.json", str(tmp_path))).read_text())
    plugin_folder = EXAMPLE_SPEC.parent / "nerplat_example"
    expected = {str(f): hashlib.sha256(f.read_bytes()).hexdigest() for f in plugin_folder.glob("*.py")}
    assert {r["file"]: r["sha256"] for r in record} == expected
