"""The experiment lease on a real SQLite MLflow store: one driver at a time, a dead one replaced."""

from __future__ import annotations

import socket
import subprocess
import sys
import time

import pytest
from host_load import scaled

from nerplat.errors import UserInputError
from nerplat.track import lease as lease_module
from nerplat.track.lease import ExperimentLease, heartbeat_key, lease_key, read_lease
from nerplat.track.experiment_tracker import ExperimentTracker


@pytest.fixture
def summary(tracking_uri):
    tracker = ExperimentTracker.open(tracking_uri, "leased")
    return tracker, tracker.summary_run().run_id


def new_lease(tracker, run_id) -> ExperimentLease:
    return ExperimentLease(tracker.tracking_uri, tracker.client, run_id, "leased")


def test_a_second_driver_is_refused_while_the_first_holds_the_lease(summary):
    tracker, run_id = summary
    first = new_lease(tracker, run_id)
    first.acquire()
    try:
        with pytest.raises(UserInputError, match="being run by another driver"):
            new_lease(tracker, run_id).acquire()
        assert read_lease(tracker.client, run_id).holder == first.holder
    finally:
        first.release()
    second = new_lease(tracker, run_id)
    second.acquire()  # released: the next driver takes it
    second.release()
    assert read_lease(tracker.client, run_id).generation == 2


def test_a_killed_driver_on_this_machine_is_replaced_at_once(summary):
    tracker, run_id = summary
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    tracker.client.log_param(run_id, lease_key(1), f"{socket.gethostname()}:{dead.pid}:feedbeef")
    tracker.client.set_tag(run_id, heartbeat_key(1), f"{time.time():.0f}")
    taker = new_lease(tracker, run_id)
    taker.acquire()
    taker.release()
    assert read_lease(tracker.client, run_id).generation == 2


def test_a_driver_elsewhere_holds_until_its_heartbeat_goes_stale(summary):
    tracker, run_id = summary
    tracker.client.log_param(run_id, lease_key(1), "other-host:1:feedbeef")
    tracker.client.set_tag(run_id, heartbeat_key(1), f"{time.time() - 10:.0f}")
    with pytest.raises(UserInputError, match="last heartbeat 1[0-9] s ago"):
        new_lease(tracker, run_id).acquire()
    tracker.client.set_tag(run_id, heartbeat_key(1), f"{time.time() - lease_module.STALE_SECONDS - 5:.0f}")
    taker = new_lease(tracker, run_id)
    taker.acquire()
    taker.release()


def test_the_heartbeat_keeps_the_lease_fresh(summary, monkeypatch):
    tracker, run_id = summary
    monkeypatch.setattr(lease_module, "HEARTBEAT_SECONDS", 0.2)
    holder = new_lease(tracker, run_id)
    holder.acquire()
    try:
        tracker.client.set_tag(run_id, heartbeat_key(1), "0")
        deadline = time.monotonic() + scaled(30)
        while read_lease(tracker.client, run_id).heartbeat == "0" and time.monotonic() < deadline:
            time.sleep(0.2)
        assert read_lease(tracker.client, run_id).heartbeat not in ("0", lease_module.RELEASED)
    finally:
        holder.release()
    assert read_lease(tracker.client, run_id).heartbeat == lease_module.RELEASED


def test_of_two_drivers_claiming_one_generation_the_store_lets_one_win(summary, monkeypatch):
    tracker, run_id = summary
    loser = new_lease(tracker, run_id)
    original = lease_module.read_lease

    def raced(client, run):  # the other driver claims between the loser's read and its claim
        state = original(client, run)
        if state.generation == 0:
            client.log_param(run, lease_key(1), "other-host:1:feedbeef")
            client.set_tag(run, heartbeat_key(1), f"{time.time():.0f}")
        return state

    monkeypatch.setattr(lease_module, "read_lease", raced)
    with pytest.raises(UserInputError, match="other-host:1:feedbeef"):
        loser.acquire()


def test_a_store_that_refuses_the_claim_is_said_read_only_not_held_by_a_driver_long_gone(
    summary, tmp_path, monkeypatch
):
    """Issue 31, M7: a resume on a read-only store named the driver that had released the lease."""
    monkeypatch.chdir(tmp_path)  # MLflow's _make_parent_dirs_if_sqlite makes `file:/...` a folder here
    from mlflow import MlflowClient

    from nerplat.errors import StorageError
    from nerplat.track.store import sqlite_path

    tracker, run_id = summary
    earlier = new_lease(tracker, run_id)
    earlier.acquire()
    earlier.release()
    read_only = f"sqlite:///file:{sqlite_path(tracker.tracking_uri)}?mode=ro&uri=true"
    lease = ExperimentLease(read_only, MlflowClient(read_only), run_id, "leased")
    with pytest.raises(StorageError) as refused:
        lease.acquire()
    message = str(refused.value)
    assert f"the MLflow store at {read_only} is read-only or not writable" in message
    assert "readonly database" in message and "another driver" not in message and earlier.holder not in message
    assert read_lease(tracker.client, run_id).holder == earlier.holder  # nothing was claimed
