"""An embedded Ray started in the test process as `nerplat run` starts it (`connect_ray`), at the host's pace.

Ray's start waits for its GCS, raylet and dashboard, each within a limit of its own; on a loaded host
a healthy node can miss them. The limits Ray lets a caller set are `scaled` by the load; the raylet's
is fixed in Ray's code (`Node.__init__`), so a start that timed out is tried again, a bounded number
of times: a start that fails otherwise, or every time, still fails the test with Ray's own error.
"""

from __future__ import annotations

import pytest
from host_load import scaled

ATTEMPTS = 3


def is_start_timeout(error: BaseException) -> bool:
    """Ray's way of saying a process of the node was not up in time (it raises plain Exceptions too)."""
    return isinstance(error, TimeoutError) or "timed out" in str(error).lower()


def connect_embedded(monkeypatch: pytest.MonkeyPatch) -> str | None:
    """`connect_ray(None, verbose=False)` with Ray's start limits scaled to the host's load, started again
    after a start timeout; returns the dashboard URL. The caller shuts Ray down."""
    import ray
    from ray._private import ray_constants

    from nerplat.run.ray_session import connect_ray

    monkeypatch.setenv("RAY_gcs_server_port_wait_time_s", str(round(scaled(30))))  # Ray's default for its in-memory GCS
    monkeypatch.setattr(
        ray_constants, "RAY_DASHBOARD_STARTUP_TIMEOUT_S", round(scaled(ray_constants.RAY_DASHBOARD_STARTUP_TIMEOUT_S))
    )
    for _ in range(ATTEMPTS - 1):
        try:
            return connect_ray(None, verbose=False)
        except Exception as error:
            ray.shutdown()
            if not is_start_timeout(error):
                raise
    return connect_ray(None, verbose=False)
