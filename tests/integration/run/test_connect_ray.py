"""An embedded Ray cluster listens on loopback only (issue 11, item 12)."""

from __future__ import annotations

import os
import re

import pytest

from embedded_ray import connect_embedded
from listening_sockets import listeners, process_tree


@pytest.fixture
def embedded_ray(monkeypatch: pytest.MonkeyPatch):
    """The `ray` module, connected by `connect_ray`, and the dashboard URL it returned."""
    import ray

    if ray.is_initialized():
        pytest.fail("a Ray session of an earlier test is still open: this test must start its own")
    try:
        yield ray, connect_embedded(monkeypatch)
    finally:
        ray.shutdown()


@pytest.mark.slow
def test_every_process_of_an_embedded_cluster_listens_on_loopback_only(embedded_ray):
    embedded_ray, dashboard = embedded_ray
    @embedded_ray.remote(num_cpus=0)
    def worker_pid() -> int:
        return os.getpid()

    worker = embedded_ray.get(worker_pid.remote())  # a worker process is up, with its own gRPC server
    tree = process_tree(os.getpid())
    assert worker in tree
    found = listeners(tree)
    names = {listener.process for listener in found}
    assert "gcs_server" in names and "raylet" in names, found  # the servers are there to be checked
    exposed = [listener for listener in found if not listener.loopback_only]
    assert exposed == [], exposed
    assert embedded_ray.util.get_node_ip_address() == "127.0.0.1"
    # the URL `nerplat run` prints is the dashboard's own address
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+", dashboard), dashboard
    assert int(dashboard.rsplit(":", 1)[1]) in {listener.port for listener in found}, (dashboard, found)


def test_loopback_addresses_are_recognised():
    from listening_sockets import Listener

    assert Listener(1, "x", "::ffff:127.0.0.1", 1).loopback_only and Listener(1, "x", "::1", 1).loopback_only
    assert not Listener(1, "x", "0.0.0.0", 1).loopback_only and not Listener(1, "x", "::", 1).loopback_only
    assert not Listener(1, "x", "192.0.2.2", 1).loopback_only


@pytest.fixture
def ray_temp_dir(monkeypatch: pytest.MonkeyPatch):
    """A Ray temp dir of this test's own (`$RAY_TMPDIR/ray`, where Ray looks for `ray_current_cluster`);
    short, as Ray's Unix socket paths must be."""
    import shutil
    import tempfile
    from pathlib import Path

    root = Path(tempfile.mkdtemp(prefix="nr-", dir="/tmp"))
    (root / "ray").mkdir()
    monkeypatch.setenv("RAY_TMPDIR", str(root))
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    yield root / "ray"
    shutil.rmtree(root, ignore_errors=True)


def embedded_gcs_port() -> int:
    import ray

    return int(ray.get_runtime_context().gcs_address.rsplit(":", 1)[1])


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_stale_current_cluster_file_is_not_joined(ray_temp_dir, monkeypatch):
    """Issue 31, H5: a `ray_current_cluster` naming a cluster long gone made `ray.init()` retry "Failed
    to connect to GCS" for ever; the embedded Ray starts a new cluster instead."""
    import ray

    from nerplat.loopback import free_port

    gone = free_port()
    (ray_temp_dir / "ray_current_cluster").write_text(f"127.0.0.1:{gone}")
    try:
        connect_embedded(monkeypatch)
        assert embedded_gcs_port() != gone
        assert ray.cluster_resources().get("CPU", 0) >= 1
    finally:
        ray.shutdown()


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_cluster_started_with_ray_start_on_this_machine_is_not_joined(ray_temp_dir, tmp_path, monkeypatch):
    """Issue 31, H5: another `ray start --head` (another user's, or one's own) named in
    `ray_current_cluster` is left alone; joining it takes --address or RAY_ADDRESS."""
    import ray

    from ray_nodes import LocalRayCluster

    cluster = LocalRayCluster(tmp_path, head_cpus=1)
    try:
        cluster.start_head()
        (ray_temp_dir / "ray_current_cluster").write_text(cluster.address)  # as its `ray start` writes it by default
        try:
            connect_embedded(monkeypatch)
            assert embedded_gcs_port() != cluster.gcs_port
            assert len(ray.nodes()) == 1  # its own node only
        finally:
            ray.shutdown()
        assert cluster.alive_nodes() == 1  # the other cluster runs on, untouched
    finally:
        cluster.stop()


def test_only_a_start_that_timed_out_is_tried_again():
    from embedded_ray import is_start_timeout

    assert is_start_timeout(TimeoutError("Timed out after 30 seconds while waiting for node to startup"))
    assert is_start_timeout(Exception("The current node timed out during startup."))
    assert not is_start_timeout(RuntimeError("Failed to start the dashboard, return code 1"))
    assert not is_start_timeout(ValueError("invalid resources"))
