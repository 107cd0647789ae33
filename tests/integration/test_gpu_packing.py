"""Trials packed on one GPU by fractional requests, with a custom Ray resource standing in for the GPU.

Ray places a fraction of a custom resource exactly as it places a fraction of a GPU (`num_gpus=0.5`
is the resource "GPU" at 0.5), so two trials asking 0.5 of a `fake_gpu` of capacity 1 must share
it at once. The trials are probes that wait for each other, not training runs: what is under test
is the placement nerplat asks for (`trial_resources`) and the concurrency it allows
(`trials_that_fit`), and a probe pair shows it in seconds where two trainings would take a minute.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from host_load import scaled

from nerplat.catalog import default_catalog
from nerplat.plan.compiler import compile_plan
from nerplat.run.job import PHASE_KEY, TrialJob
from nerplat.run.ray_session import trials_that_fit
from nerplat.run.trainable import trial_resources

pytestmark = pytest.mark.slow

TINY_RUN = Path(__file__).parent / "specs" / "tiny_run.yaml"
WAIT_S = 20.0


def test_two_trials_asking_half_a_device_share_it_at_once(tmp_path: Path):
    import ray
    from ray import tune

    arm = compile_plan(TINY_RUN, default_catalog()).arms[0]
    arm = arm.model_copy(
        update={"resources": arm.resources.model_copy(update={"cpus_per_worker": 0.5, "custom": {"fake_gpu": 0.5}})}
    )
    job = TrialJob(arm=arm, phase="tune", seed=0, partition=0, eval_split=None, select_metric="micro_f1")
    arrivals = tmp_path / "arrivals"
    arrivals.mkdir()
    wait_s = scaled(WAIT_S)  # here: Ray's workers cannot import the tests' helpers

    def probe(config: dict) -> None:
        """Arrives, then waits for the other trial: both arrive only if Ray runs them together."""
        (Path(config["arrivals"]) / tune.get_context().get_trial_id()).touch()
        deadline = time.monotonic() + wait_s
        while len(list(Path(config["arrivals"]).iterdir())) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        tune.report({"met": len(list(Path(config["arrivals"]).iterdir())) == 2})

    ray.init(address="local", num_cpus=2, resources={"fake_gpu": 1.0}, include_dashboard=False, logging_level="ERROR")
    try:
        concurrent = trials_that_fit(arm, ray.cluster_resources(), None)
        tuner = tune.Tuner(
            tune.with_resources(probe, trial_resources),
            param_space={PHASE_KEY: job.model_dump(mode="json"), "arrivals": str(arrivals)},
            tune_config=tune.TuneConfig(num_samples=2, max_concurrent_trials=concurrent),
            run_config=tune.RunConfig(storage_path=str(tmp_path / "ray"), verbose=0),
        )
        results = tuner.fit()
    finally:
        ray.shutdown()
    assert concurrent == 2  # fake_gpu 1 / 0.5 per trial, though the 2 CPUs would fit 4
    assert not results.errors
    assert [result.metrics["met"] for result in results] == [True, True]
