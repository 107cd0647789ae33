"""What a trial reserves from Ray."""

from __future__ import annotations

import pytest

from nerplat.run.job import PHASE_KEY, TrialJob
from nerplat.run.trainable import trial_resources


def job_config(tiny_plan, **resources) -> dict:
    arm = tiny_plan.arms[0]
    arm = arm.model_copy(update={"resources": arm.resources.model_copy(update=resources)})
    job = TrialJob(arm=arm, phase="tune", seed=0, partition=0, eval_split=None, select_metric="micro_f1")
    return {PHASE_KEY: job.model_dump(mode="json")}


def test_a_single_worker_trial_reserves_its_worker(tiny_plan):
    assert trial_resources(job_config(tiny_plan, cpus_per_worker=2, workers=1)).bundles == [{"CPU": 2.0}]


def test_a_ddp_trial_reserves_only_its_launcher_since_train_places_its_workers_itself(tiny_plan):
    """Booked twice, 2 workers x 0.5 CPU waited forever on 2 cores for the 1.01 CPU the trial held."""
    assert trial_resources(job_config(tiny_plan, cpus_per_worker=0.5, workers=2)).bundles == [{"CPU": 0.01}]


def test_a_trial_asks_ray_for_its_share_of_a_gpu_and_of_custom_resources(tiny_plan):
    """Fractions pack trials on one device: two trials at 0.5 GPU each run side by side on one GPU."""
    assert trial_resources(job_config(tiny_plan, cpus_per_worker=1, gpus_per_worker=0.5)).bundles == [{"CPU": 1.0, "GPU": 0.5}]
    bundles = trial_resources(job_config(tiny_plan, cpus_per_worker=0.5, custom={"fake_gpu": 0.25})).bundles
    assert bundles == [{"CPU": 0.5, "fake_gpu": 0.25}]


@pytest.mark.parametrize(("bf16_step", "resolved"), [(0.5, "bf16"), (1.6, "fp32")])
def test_a_trial_reports_the_precision_its_worker_resolved_auto_to(monkeypatch, tmp_path, bf16_step, resolved):
    """From the host's cached calibration (as the driver left it): the worker never measures."""
    from nerplat.config.trial import DatasetRef, TrainSettings, TrialConfig
    from nerplat.run import trainable
    from nerplat.run.job import CPU_CAPABILITY_KEY, DEVICE_KEY, EVAL_PRECISION_KEY, MALLOC_KEY, NODE_KEY, PRECISION_KEY
    from nerplat.trial import device
    from nerplat.trial import precision_calibration
    from precision_hosts import calibrated_host

    monkeypatch.setattr(trainable, "ray_node_name", lambda: "node-1")
    monkeypatch.setattr(device, "trial_device", lambda: device.torch.device("cpu"))
    config = TrialConfig(dataset=DatasetRef(name="conll2003"), train=TrainSettings(precision="auto"))
    fp32_trained = TrialConfig(dataset=DatasetRef(name="conll2003"), train=TrainSettings(eval_precision="auto"))
    calibrated_host(monkeypatch, tmp_path, device.torch.get_num_threads(), train_bf16=bf16_step, evaluate_bf16=bf16_step)
    monkeypatch.setattr(precision_calibration, "measure", lambda *args, **kwargs: pytest.fail("the worker measured"))
    facts = trainable._worker_facts(config)
    assert facts[PRECISION_KEY] == resolved and facts[NODE_KEY] == "node-1" and MALLOC_KEY in facts
    assert facts[DEVICE_KEY].startswith("cpu: ") and facts[DEVICE_KEY].endswith(" threads")
    assert facts[CPU_CAPABILITY_KEY] == device.torch.backends.cpu.get_cpu_capability()
    assert facts[EVAL_PRECISION_KEY] == resolved  # as training, unless set apart
    cheaper = trainable._worker_facts(fp32_trained)
    assert (cheaper[PRECISION_KEY], cheaper[EVAL_PRECISION_KEY]) == ("fp32", resolved)
