"""The runner's decisions that need no running Ray: how many trials fit, which configuration wins, Ray settings."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from nerplat.run.runner import RAY_SETTINGS, choose_configuration, configure_ray_environment, trials_that_fit


def arm_with(tiny_plan, **resources):
    arm = tiny_plan.arms[0]
    return arm.model_copy(update={"resources": arm.resources.model_copy(update=resources)})


def test_trials_that_fit_divides_every_resource_a_trial_needs(tiny_plan):
    arm = arm_with(tiny_plan, cpus_per_worker=2, workers=1)
    assert trials_that_fit(arm, {"CPU": 7.0}, None) == 3
    assert trials_that_fit(arm, {"CPU": 7.0}, 2) == 2  # the spec's max_concurrent caps it
    gpus = arm_with(tiny_plan, cpus_per_worker=1, gpus_per_worker=1, workers=2)
    assert trials_that_fit(gpus, {"CPU": 16.0, "GPU": 5.0}, None) == 2  # 2 workers x 1 GPU each
    custom = arm_with(tiny_plan, cpus_per_worker=1, workers=1, custom={"accelerator": 1.0})
    assert trials_that_fit(custom, {"CPU": 16.0, "accelerator": 3.0}, None) == 3


def test_at_least_one_trial_runs_even_when_none_fits_yet(tiny_plan):
    """Tune waits for resources (an autoscaler may add nodes); a concurrency of 0 would stop nothing but the run."""
    assert trials_that_fit(arm_with(tiny_plan, cpus_per_worker=4), {"CPU": 2.0}, None) == 1
    assert trials_that_fit(arm_with(tiny_plan, cpus_per_worker=1), {"CPU": 0.999999999999}, None) == 1


def test_the_best_finished_trial_is_chosen_and_the_first_on_ties():
    finished = [({"lambda": 0.1}, 0.4), ({"lambda": 0.2}, 0.6), ({"lambda": 0.3}, 0.6), ({"lambda": 0.4}, 0.5)]
    assert choose_configuration(finished, "max") == ({"lambda": 0.2}, 0.6)
    assert choose_configuration(finished, "min") == ({"lambda": 0.1}, 0.4)


def test_importing_the_runner_sets_no_environment_variable():
    env = {k: v for k, v in os.environ.items() if k not in RAY_SETTINGS and k != "NERPLAT_RAY_STORAGE"}
    code = (
        "import os; before = dict(os.environ); import nerplat.run.runner; "
        "print(sorted(set(os.environ.items()) ^ set(before.items())))"
    )
    changed = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert changed.strip() == "[]"


def test_configure_ray_environment_keeps_the_users_values(monkeypatch: pytest.MonkeyPatch):
    for name in RAY_SETTINGS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("RAY_AIR_NEW_OUTPUT", "1")
    monkeypatch.delenv("NERPLAT_RAY_STORAGE", raising=False)
    configure_ray_environment("/tmp/ray-storage")
    assert os.environ["RAY_AIR_NEW_OUTPUT"] == "1"
    assert os.environ["TUNE_DISABLE_AUTO_CALLBACK_LOGGERS"] == "1"
    assert os.environ["NERPLAT_RAY_STORAGE"] == "/tmp/ray-storage"
