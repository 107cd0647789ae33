"""Ray's side of a run (`TuneDriver`) without a running Ray: what it says when Ray starts, that it
connects once, where the cluster's address comes from, and how a Tuner's end is read."""

from __future__ import annotations

import io
import time

import pytest
from rich.console import Console

from nerplat.run import allocator, tune_driver
from nerplat.run.exported_metrics import TrialMetrics
from nerplat.run.progress import ProgressBoard
from nerplat.run.ray_session import Interrupted
from nerplat.run.tune_driver import TuneDriver
from nerplat.track.store import StoreLost


def driver_for(plan, tmp_path, console: Console | None = None, **options) -> TuneDriver:
    console = console or Console(quiet=True)
    board = ProgressBoard(plan.experiment, console)
    return TuneDriver(plan, board, TrialMetrics(plan.experiment), console, storage=str(tmp_path / "ray"), **options)


def test_starting_ray_is_said_before_and_its_dashboard_after(tiny_plan, tmp_path, monkeypatch):
    stream = io.StringIO()
    monkeypatch.delenv("RAY_ADDRESS", raising=False)

    def connect(address, verbose, metrics_port, flag):
        stream.write("<ray starts>\n")
        return "http://127.0.0.1:8265"

    monkeypatch.setattr(tune_driver, "connect_ray", connect)
    monkeypatch.setattr(tune_driver, "concurrency", lambda arm, limit: 3)
    monkeypatch.setattr(allocator, "installed_tcmalloc", lambda: "libtcmalloc_minimal.so.4")  # as Debian's package
    driver = driver_for(tiny_plan, tmp_path, Console(file=stream, width=200), address=None)
    driver._start()
    lines = stream.getvalue().splitlines()
    assert lines[0].endswith("starting Ray (embedded, on 127.0.0.1)") and lines[1] == "<ray starts>"
    malloc = "trial workers allocate with tcmalloc (libtcmalloc_minimal.so.4)"
    assert lines[2].endswith(f"Ray started, dashboard at http://127.0.0.1:8265; {malloc}")
    assert driver.board.concurrency == 3
    driver.metrics_port = 18080
    driver._start()
    assert stream.getvalue().splitlines()[-1].endswith(
        f"Ray started, dashboard at http://127.0.0.1:8265; Prometheus metrics at http://127.0.0.1:18080/metrics; {malloc}"
    )


def test_ray_is_connected_once_however_often_a_phase_asks(tiny_plan, tmp_path, monkeypatch):
    driver = driver_for(tiny_plan, tmp_path, address=None)
    calls = []
    monkeypatch.setattr(driver, "_start", lambda: calls.append("start"))
    monkeypatch.setattr(driver, "_refuse_unplaceable", lambda: calls.append("placed"))
    monkeypatch.setattr(driver.metrics, "start", lambda: calls.append("metrics"))
    monkeypatch.setattr(tune_driver, "treat_sigterm_as_ctrl_c", lambda: None)
    assert not driver.connected
    driver.connect()
    driver.connect()
    assert calls == ["start", "placed", "metrics"] and driver.connected


def test_the_cluster_is_the_address_given_else_ray_address(tiny_plan, tmp_path, monkeypatch):
    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.2:6379")
    given = driver_for(tiny_plan, tmp_path, address="10.0.0.1:6379")
    assert (given.address, given.address_flag) == ("10.0.0.1:6379", "--address")
    from_env = driver_for(tiny_plan, tmp_path, address=None)
    assert (from_env.address, from_env.address_flag) == ("10.0.0.2:6379", "RAY_ADDRESS")
    monkeypatch.delenv("RAY_ADDRESS")
    assert from_env.address is None  # an embedded Ray


class StoppedTuner:
    """A Tuner whose fit returns after `seconds`, as Tune's does when its time budget is spent or on Ctrl-C."""

    def __init__(self, seconds: float, error: BaseException | None = None):
        self.seconds, self.error = seconds, error

    def fit(self):
        time.sleep(self.seconds)
        if self.error is not None:
            raise self.error


class EndedTrials:
    def __init__(self, ended: int):
        self.outcomes = {f"t{i}": "completed" for i in range(ended)}

    def mark_interrupted(self) -> int:
        return 0


def test_an_embedded_rays_workers_are_reused_only_off_glibc_a_clusters_always(tiny_plan, tmp_path, monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.delenv("LD_PRELOAD", raising=False)
    monkeypatch.setattr(allocator, "installed_tcmalloc", lambda: None)
    assert not driver_for(tiny_plan, tmp_path, address=None).reuse_workers
    assert driver_for(tiny_plan, tmp_path, address="10.0.0.1:6379").reuse_workers  # its nodes choose their malloc
    monkeypatch.setattr(allocator, "installed_tcmalloc", lambda: "libtcmalloc_minimal.so.4")
    assert driver_for(tiny_plan, tmp_path, address=None).reuse_workers


def test_a_tuner_stopped_by_its_time_budget_is_not_an_interruption(tiny_plan, tmp_path):
    driver = driver_for(tiny_plan, tmp_path, address=None)
    assert driver.fit(StoppedTuner(0.3), EndedTrials(2), expected=5, time_budget_s=0.2) is True
    assert driver.fit(StoppedTuner(0.0), EndedTrials(5), expected=5, time_budget_s=0.2) is False
    with pytest.raises(Interrupted):  # stopped before the budget was spent: the user stopped it
        driver.fit(StoppedTuner(0.0), EndedTrials(2), expected=5, time_budget_s=60)
    with pytest.raises(Interrupted):
        driver.fit(StoppedTuner(0.0), EndedTrials(2), expected=5)


def test_a_store_lost_in_a_tune_callback_is_raised_as_itself(tiny_plan, tmp_path):
    driver = driver_for(tiny_plan, tmp_path, address=None)
    lost = StoreLost("http://127.0.0.1:5000", 60.0, "connection refused")
    try:
        raise RuntimeError("Tune wrapped it") from lost
    except RuntimeError as wrapped:
        tuner = StoppedTuner(0.0, wrapped)
    with pytest.raises(StoreLost) as raised:
        driver.fit(tuner, EndedTrials(0), expected=1)
    assert raised.value is lost
    with pytest.raises(ValueError):  # anything else is a bug, shown as it is
        driver.fit(StoppedTuner(0.0, ValueError("bug")), EndedTrials(0), expected=1)
