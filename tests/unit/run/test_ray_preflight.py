"""What Ray would report as a timeout is refused before it starts, naming the cause (issue 31, M6)."""

from __future__ import annotations

import resource
import socket
import subprocess
import sys

import pytest
from host_load import scaled

from nerplat.errors import UserInputError
from nerplat.run import ray_preflight
from nerplat.run.ray_preflight import refuse_busy_port, refuse_unreachable_cluster, refuse_unusable_ray
from nerplat.loopback import free_port


@pytest.fixture
def listening_socket():
    """A socket that listens on a loopback port and never answers what connects to it."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        yield server.getsockname()[1]


def test_a_metrics_port_another_process_listens_on_is_refused_with_the_flag(listening_socket):
    with pytest.raises(UserInputError) as refused:
        refuse_busy_port(listening_socket)
    (problem,) = refused.value.problems
    assert problem.path == "--metrics-port"
    assert f"port {listening_socket}" in problem.message and "another process listens on it" in problem.message
    refuse_busy_port(free_port())  # a free port passes


def test_a_metrics_port_is_refused_for_a_running_cluster_before_it_is_probed(monkeypatch):
    monkeypatch.setattr(ray_preflight, "refuse_unreachable_cluster", lambda address, flag: pytest.fail("refused before probing"))
    with pytest.raises(UserInputError, match="--metrics-port sets the port of an embedded Ray"):
        refuse_unusable_ray("ray-head:6379", "--address", metrics_port=18080)


def test_an_address_where_nothing_listens_is_refused_at_once():
    port = free_port()
    with pytest.raises(UserInputError) as refused:
        refuse_unreachable_cluster(f"127.0.0.1:{port}", "RAY_ADDRESS")
    (problem,) = refused.value.problems
    assert problem.path == "RAY_ADDRESS"
    assert f"no Ray cluster answers at 127.0.0.1:{port}" in problem.message and "refused" in problem.message.lower()


@pytest.mark.parametrize("address", ["ray-head", "ray-head:port", "10.0.0.1:70000", ":6379"])
def test_an_address_that_is_no_host_and_port_is_refused(address: str):
    with pytest.raises(UserInputError, match="is not a Ray cluster address: give HOST:PORT"):
        refuse_unreachable_cluster(address, "--address")


def test_a_listener_that_is_no_ray_cluster_is_refused_after_the_handshake_timeout(listening_socket, monkeypatch):
    # The wait is the test's whole cost. The child imports Ray (0.7 s of CPU) before its handshake blocks: 3 s,
    # stretched on a loaded host, lets it get there, so a GcsClient that failed at once still fails this test.
    timeout = round(scaled(3.0), 1)
    monkeypatch.setattr(ray_preflight, "HANDSHAKE_SECONDS", timeout)
    with pytest.raises(UserInputError) as refused:
        refuse_unreachable_cluster(f"127.0.0.1:{listening_socket}", "--address")
    assert f"no Ray cluster answered there within {timeout:g} s" in str(refused.value)
    assert "ray start --head" in str(refused.value)


def test_a_file_size_limit_below_the_object_store_is_refused_naming_ulimit():
    """In a child process whose RLIMIT_FSIZE is 100 MB (`ulimit -f 102400`): Ray's node would die at start."""
    code = (
        "from nerplat.errors import UserInputError\n"
        "from nerplat.run.ray_preflight import refuse_small_file_size_limit\n"
        "try:\n    refuse_small_file_size_limit()\nexcept UserInputError as e:\n    print(e)\n"
    )
    limit = 100 << 20

    def lower_limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))

    out = subprocess.run([sys.executable, "-c", code], preexec_fn=lower_limit, capture_output=True, text=True, check=True).stdout
    assert "ulimit -f: 102400 KiB" in out and "ulimit -f unlimited" in out and "object store" in out
    unlimited = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    if resource.getrlimit(resource.RLIMIT_FSIZE)[0] == resource.RLIM_INFINITY:
        assert unlimited == ""


def test_a_ray_client_address_that_fails_to_join_names_the_token():
    """Issue 62: a Ray Client (ray://) address is not probed, and a server wanting a token only times out."""
    problem = ray_preflight.joining_problem("ray://head:10001", "--address", ConnectionError("ray client connection timeout"))
    message = str(problem.problems[0])
    assert "could not join the Ray cluster at ray://head:10001 (ConnectionError: ray client connection timeout)" in message
    assert "RAY_AUTH_MODE=token" in message and "RAY_AUTH_TOKEN" in message
    gcs = ray_preflight.joining_problem("head:6379", "--address", ConnectionError("x"))
    assert "RAY_AUTH" not in str(gcs)  # a GCS address was probed for its token before
