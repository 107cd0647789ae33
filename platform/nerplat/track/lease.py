"""One driver per experiment: a lease on the summary run's bookkeeping run, held with a heartbeat.

Two drivers of one experiment (two `--resume` at once) would both train every trial. The lease is
kept in the store, so it holds across machines, with the one first-writer-wins operation MLflow
offers (see `track/experiment_tracker.py`): logging a param. A driver claims generation `n` of the lease by
logging `nerplat.lease.<n> = <holder>` on the run it is given (the summary run's bookkeeping run);
a second driver claiming the same generation is refused by the store. The holder then writes the
tag `nerplat.lease.<n>.heartbeat` (unix time) every `HEARTBEAT_SECONDS` from a thread, and
`released` when it ends.

A driver may claim generation `n + 1` when generation `n` is released, or its heartbeat is older
than `STALE_SECONDS` (a driver killed on another machine), or its holder was a process on this
machine that no longer exists (a killed driver is replaced at once, with no wait).

A claim the store refuses while no other driver's claim took its place is not a lost race: the
store is read-only or not writable, and is reported as such (`StorageError`).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass

from nerplat.errors import StorageError, UserInputError

LEASE_PREFIX = "nerplat.lease."
HEARTBEAT_SECONDS = 15.0
STALE_SECONDS = 90.0
RELEASED = "released"


def lease_key(generation: int) -> str:
    return f"{LEASE_PREFIX}{generation}"


def heartbeat_key(generation: int) -> str:
    return f"{LEASE_PREFIX}{generation}.heartbeat"


def new_holder_id() -> str:
    """`<host>:<pid>:<token>`: the host and pid let a driver on the same machine see a dead holder."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def holder_is_dead(holder: str) -> bool:
    """True only when the holder ran on this machine and its process is gone."""
    host, _, rest = holder.partition(":")
    pid = rest.partition(":")[0]
    if host != socket.gethostname() or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, another user's
        return False
    return False


@dataclass(frozen=True)
class LeaseState:
    generation: int  # 0: never claimed
    holder: str | None
    heartbeat: str | None  # unix time as text, RELEASED, or None (not yet written)

    def free(self, now: float) -> bool:
        if self.holder is None or self.heartbeat == RELEASED:
            return True
        if holder_is_dead(self.holder):
            return True
        return self.heartbeat is not None and now - float(self.heartbeat) > STALE_SECONDS


@contextmanager
def _quiet_store_errors():
    """MLflow's SQL store logs a refused insert with its traceback before raising; the claim's outcome
    (a lost race, or a store that cannot be written) is what the driver reports instead."""
    logger = logging.getLogger("mlflow.store.db.utils")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)


def read_lease(client, run_id: str) -> LeaseState:
    run = client.get_run(run_id)
    generation = 0
    while lease_key(generation + 1) in run.data.params:
        generation += 1
    if generation == 0:
        return LeaseState(0, None, None)
    return LeaseState(generation, run.data.params[lease_key(generation)], run.data.tags.get(heartbeat_key(generation)))


class ExperimentLease:
    """The lease of one driver on one summary run: `acquire`, then `release` when the run ends."""

    def __init__(self, tracking_uri: str, client, run_id: str, experiment: str):
        self.tracking_uri = tracking_uri
        self.client = client
        self.run_id = run_id
        self.experiment = experiment
        self.holder = new_holder_id()
        self.generation = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def acquire(self) -> None:
        """Claims the lease and starts the heartbeat; UserInputError while another driver holds it."""
        from mlflow.exceptions import MlflowException

        state = self.refuse_if_held()
        generation = state.generation + 1
        try:
            with _quiet_store_errors():
                self.client.log_param(self.run_id, lease_key(generation), self.holder)
        except MlflowException as error:
            state = read_lease(self.client, self.run_id)
            if state.generation < generation:  # no one claimed it: the store refused the write itself
                raise self._unwritable(error) from None
            if state.generation != generation or state.holder != self.holder:  # another driver won the claim
                raise UserInputError(self._held_message(state)) from None
        self.generation = generation
        self._beat()
        self._thread = threading.Thread(target=self._heartbeats, name="nerplat-lease", daemon=True)
        self._thread.start()

    def refuse_if_held(self) -> LeaseState:
        """UserInputError while another driver holds the lease; claims nothing (a driver calls it
        before it starts Ray, then `acquire` claims)."""
        state = read_lease(self.client, self.run_id)
        if state.holder is not None and state.heartbeat is None:
            time.sleep(2.0)  # the holder writes its first heartbeat right after its claim
            state = read_lease(self.client, self.run_id)
        if not state.free(time.time()):
            raise UserInputError(self._held_message(state))
        return state

    def release(self) -> None:
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join(timeout=5)
        self._thread = None
        try:
            self.client.set_tag(self.run_id, heartbeat_key(self.generation), RELEASED)
        except Exception:  # the store is gone: the heartbeat goes stale and frees the lease
            pass

    def _beat(self) -> None:
        self.client.set_tag(self.run_id, heartbeat_key(self.generation), f"{time.time():.0f}")

    def _heartbeats(self) -> None:
        from mlflow import MlflowClient

        client = MlflowClient(tracking_uri=self.tracking_uri)  # its own client: the driver's is busy
        while not self._stop.wait(HEARTBEAT_SECONDS):
            try:
                client.set_tag(self.run_id, heartbeat_key(self.generation), f"{time.time():.0f}")
            except Exception:  # a store outage: the driver's own writes report it
                continue

    def _unwritable(self, error: Exception) -> StorageError:
        """A claim the store refused with no other claim in its place: a read-only or unwritable store,
        not a lost race (which would name a driver that may have ended long ago)."""
        detail = str(error).strip().splitlines()[0][:300] if str(error).strip() else type(error).__name__
        return StorageError(
            f"the MLflow store at {self.tracking_uri} is read-only or not writable by this user: it refused the "
            f"lease of experiment '{self.experiment}' ({detail}); nothing was changed: make the store writable, or "
            "point tracking.uri (or MLFLOW_TRACKING_URI) at a store this driver can write to"
        )

    def _held_message(self, state: LeaseState) -> str:
        age = "" if state.heartbeat in (None, RELEASED) else f", last heartbeat {time.time() - float(state.heartbeat):.0f} s ago"
        return (
            f"experiment '{self.experiment}' is being run by another driver ({state.holder}{age}); nothing was "
            f"changed: wait for it to end, or stop it (Ctrl-C) and run again with --resume. A driver killed on "
            f"another machine frees the experiment {STALE_SECONDS:.0f} s after its last heartbeat"
        )
