"""nerplat's exported metrics: the series a trial's evaluations and the board's counts make, how long
they are exported, and that a failing Ray metrics API never reaches the run."""

from __future__ import annotations

import logging
import time
from types import SimpleNamespace

import pytest
from host_load import scaled

from nerplat.run import exported_metrics
from nerplat.run.exported_metrics import (
    DEFINITIONS,
    TRIAL_DEV_SCORE,
    TRIAL_EPOCH_SECONDS,
    TRIAL_TOKENS_PER_SECOND,
    TRIALS,
    TrialMetrics,
    evaluation_values,
    series,
)
from nerplat.run.job import TrialJob
from nerplat.run.progress import PhaseProgress
from nerplat.trial.results import Evaluation, Timings


@pytest.fixture
def job(tiny_plan) -> TrialJob:
    arm = next(arm for arm in tiny_plan.arms if arm.search_space)
    return TrialJob(arm=arm, phase="tune", seed=0, partition=0, eval_split=None, select_metric="micro_f1")


def evaluation(epoch: int, f1: float, train: float, evaluate: float, tokens: int) -> Evaluation:
    return Evaluation(
        epoch, 4, {"micro_f1": f1}, {"micro_f1": f1}, 0.5, Timings(train=train, evaluate=evaluate, train_tokens=tokens)
    )


def values_by_metric(values: dict) -> dict[str, float]:
    return {name: value for (name, _), value in values.items()}


def test_every_definition_is_exported_under_rays_prefix_with_the_tags_its_series_get():
    assert [d.exported_name for d in DEFINITIONS] == [
        "ray_nerplat_trials", "ray_nerplat_trial_dev_score", "ray_nerplat_trial_train_tokens_per_second",
        "ray_nerplat_trial_epoch_seconds",
    ]
    with pytest.raises(ValueError, match="takes tags"):
        series(TRIALS, experiment="e", arm="a", phase="tune")


def test_an_evaluation_gives_dev_score_tokens_per_second_and_epoch_time(job):
    arm = {"experiment": "e", "arm": job.arm.id, "phase": "tune", "trial": "t0001"}
    values = evaluation_values(
        "e", job, "t0001", "10.0.0.7", evaluation(2, 0.4, train=8.0, evaluate=2.0, tokens=4000), previous=(0, 0.0)
    )
    assert values == {
        series(TRIAL_TOKENS_PER_SECOND, **arm, node="10.0.0.7"): 500.0,
        series(TRIAL_DEV_SCORE, **arm, metric="micro_f1"): 0.4,
        series(TRIAL_EPOCH_SECONDS, **arm, node="10.0.0.7"): 5.0,  # two epochs in 10 s
    }
    later = evaluation_values(
        "e", job, "t0001", "10.0.0.7", evaluation(3, 0.5, train=12.0, evaluate=3.0, tokens=6000), previous=(2, 10.0)
    )
    assert values_by_metric(later)[TRIAL_EPOCH_SECONDS.name] == 5.0


def test_a_multi_worker_trial_counts_every_workers_tokens(job):
    two_workers = job.model_copy(
        update={"arm": job.arm.model_copy(update={"resources": job.arm.resources.model_copy(update={"workers": 2})})}
    )
    values = evaluation_values(
        "e", two_workers, "t0001", "n", evaluation(1, 0.4, train=8.0, evaluate=2.0, tokens=4000), previous=(0, 0.0)
    )
    assert values_by_metric(values)[TRIAL_TOKENS_PER_SECOND.name] == 1000.0  # rank 0's 500/s, times 2 workers


def test_after_a_retry_the_epoch_time_waits_for_the_next_evaluation(job):
    metrics = TrialMetrics("e")
    metrics.evaluated("id1", job, f"{job.arm.label} · t0001", "n", evaluation(1, 0.3, train=9.0, evaluate=1.0, tokens=100))
    metrics.retried("id1")  # restarted from the epoch-1 checkpoint: its timings start again from 0
    metrics.evaluated("id1", job, f"{job.arm.label} · t0001", "n", evaluation(2, 0.4, train=10.5, evaluate=0.5, tokens=100))
    assert TRIAL_EPOCH_SECONDS.name not in values_by_metric(metrics.current())
    metrics.evaluated("id1", job, f"{job.arm.label} · t0001", "n", evaluation(3, 0.5, train=19.0, evaluate=1.0, tokens=100))
    assert values_by_metric(metrics.current())[TRIAL_EPOCH_SECONDS.name] == 9.0


def test_counts_stay_and_a_trials_series_go_once_it_has_ended_and_lingered(job):
    metrics = TrialMetrics("e", linger_seconds=0.2)
    metrics.counted(PhaseProgress(job.arm.id, "tune", total=3, running=1, finished=2))
    metrics.evaluated("id1", job, f"{job.arm.label} · t0002", "n", evaluation(1, 0.3, train=9.0, evaluate=1.0, tokens=100))
    current = metrics.current()
    trials = {dict(tags)["state"]: value for (name, tags), value in current.items() if name == TRIALS.name}
    assert trials == {"running": 1.0, "finished": 2.0, "stopped": 0.0, "failed": 0.0}
    # its run name within arm and phase
    assert {dict(tags)["trial"] for (name, tags) in current if name != TRIALS.name} == {"t0002"}
    metrics.ended("id1")
    assert TRIAL_DEV_SCORE.name in values_by_metric(metrics.current())  # a short trial's last values still get scraped
    time.sleep(0.3)
    assert set(values_by_metric(metrics.current())) == {TRIALS.name}


class RecordingGauge:
    """Stands in for `ray.util.metrics.Gauge`: remembers what was set."""

    made: list[RecordingGauge] = []

    def __init__(self, name: str, description: str = "", tag_keys: tuple[str, ...] = ()):
        self.name, self.tag_keys, self.values = name, tag_keys, {}
        RecordingGauge.made.append(self)

    def set(self, value: float, tags: dict[str, str]) -> None:
        assert set(tags) == set(self.tag_keys)
        self.values[tuple(sorted(tags.items()))] = value


@pytest.fixture
def ray_gauges(monkeypatch):
    """Ray's Gauge replaced by `RecordingGauge`, with a report interval of 1 s (so a refresh every 0.5 s)."""
    import ray
    import ray.util.metrics

    RecordingGauge.made = []
    monkeypatch.setattr(ray.util.metrics, "Gauge", RecordingGauge)
    monkeypatch.setattr(ray, "_config", SimpleNamespace(metrics_report_interval_ms=lambda: 1000))
    return RecordingGauge.made


def wait_for(condition, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + scaled(seconds)
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_a_started_recorder_records_every_series_again_until_stopped(job, ray_gauges):
    metrics = TrialMetrics("e")
    metrics.start()
    try:
        assert [gauge.name for gauge in ray_gauges] == [d.name for d in DEFINITIONS]
        gauges = {gauge.name: gauge for gauge in ray_gauges}
        metrics.counted(PhaseProgress(job.arm.id, "tune", total=3, running=2))
        wait_for(lambda: gauges[TRIALS.name].values)
        gauges[TRIALS.name].values.clear()
        wait_for(lambda: gauges[TRIALS.name].values)  # recorded again, unchanged: Ray forgets gauges it does not hear of
    finally:
        metrics.stop()
    assert not metrics._thread.is_alive()


def test_hold_keeps_recording_the_last_change_for_the_linger_then_returns(job, ray_gauges):
    metrics = TrialMetrics("e", linger_seconds=1.5)
    assert metrics.hold_seconds() == 0.0  # not exporting: nothing to hold
    metrics.start()
    try:
        gauges = {gauge.name: gauge for gauge in ray_gauges}
        metrics.counted(PhaseProgress(job.arm.id, "tune", total=3, finished=3))  # the run's final counts
        changed = time.monotonic()
        assert 1.0 < metrics.hold_seconds() <= 1.5
        time.sleep(0.6)
        gauges[TRIALS.name].values.clear()
        metrics.hold()
        held = time.monotonic() - changed
        assert gauges[TRIALS.name].values  # recorded again during the hold
        assert metrics.hold_seconds() == 0.0
    finally:
        metrics.stop()
    assert 1.4 <= held < 1.5 + scaled(1.5)
    metrics.counted(PhaseProgress(job.arm.id, "tune", total=3, finished=3))  # the same counts again are no change
    assert metrics.hold_seconds() == 0.0
    metrics.counted(PhaseProgress(job.arm.id, "tune", total=4, finished=3, running=1))
    assert metrics.hold_seconds() > 1.0


def test_a_failing_ray_metrics_api_is_logged_once_and_never_raised(job, monkeypatch, caplog):
    import ray.util.metrics

    def broken(*args, **kwargs):
        raise RuntimeError("no metrics agent")

    monkeypatch.setattr(ray.util.metrics, "Gauge", broken)
    metrics = TrialMetrics("e")
    with caplog.at_level(logging.WARNING, logger=exported_metrics.__name__):
        metrics.start()
        metrics.evaluated("id1", job, f"{job.arm.label} · t0001", "n", evaluation(1, 0.3, train=9.0, evaluate=1.0, tokens=100))
        metrics.stop()
    assert [record.getMessage() for record in caplog.records] == [
        "nerplat's metrics are not exported: Ray's metrics API failed (no metrics agent)"
    ]


def test_a_gauge_that_fails_while_recording_stops_the_export_not_the_run(job, ray_gauges, monkeypatch, caplog):
    def broken(self, value, tags):
        raise RuntimeError("agent gone")

    monkeypatch.setattr(RecordingGauge, "set", broken)
    metrics = TrialMetrics("e")
    metrics.counted(PhaseProgress(job.arm.id, "tune", total=3, running=1))
    with caplog.at_level(logging.WARNING, logger=exported_metrics.__name__):
        metrics.start()
        wait_for(lambda: not metrics._thread.is_alive())
    metrics.stop()
    assert "no longer exported: Ray's metrics API failed (agent gone)" in caplog.text
