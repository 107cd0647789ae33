"""An embedded Ray cluster listens on loopback only (issue 11, item 12)."""

from __future__ import annotations

import os
import re

import pytest

from listening_sockets import listeners, process_tree


@pytest.fixture
def embedded_ray():
    """The `ray` module, connected by `connect_ray`, and the dashboard URL it returned."""
    import ray

    from nerplat.run.runner import connect_ray

    if ray.is_initialized():
        pytest.fail("a Ray session of an earlier test is still open: this test must start its own")
    try:
        yield ray, connect_ray(None, verbose=False)
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
