"""A short calibration run: this host's training and evaluation speed for an arm's encoder, where
the MLflow store has no earlier runs of it on this device in its arithmetic.

A trial session of the arm's dataset and samplers, cut to `STEPS` batches of its batch size
(a `low_resource` draw of that many sentences), with the arm's encoder, max_length, threads and the
arithmetic `auto` resolves to here, trains cross-entropy on a softmax head for two epochs; the
second is timed (`bench.train.trial_loop_epoch`: the first allocates the optimiser's state), then
a dev evaluation of `DEV_SENTENCES` twice, the second timed (the first builds the kernels of its
shapes, as a trial's first evaluation does once for all its epochs). Start-up is that of a second
session, after a first one filled this process's caches (corpus, features, kernels): the
prediction charges it to every trial, and only a run's first trial starts cold. One pass a batch:
the prediction multiplies by the passes of the arm's objective.
"""

from __future__ import annotations

import time

import torch

from nerplat.bench.train import trial_loop_epoch
from nerplat.config.trial import Component, DatasetRef, EncoderSettings, TrainSettings, TrialConfig
from nerplat.estimate.cost import Calibration, Machine, calibration_key
from nerplat.estimate.host import arm_threads, device_of, read_tokens
from nerplat.plan.model import Arm
from nerplat.trial.data import prepare_corpus
from nerplat.trial.session import TrialSession

STEPS = 6  # training steps of each of the two epochs
DEV_SENTENCES = 64


def calibrate(arms: list[Arm], machine: Machine) -> list[Calibration]:
    """One calibration per encoder, device, arithmetic, batch size and max_length among `arms`."""
    first = {calibration_key(arm, machine): arm for arm in reversed(arms)}
    return [calibrate_arm(arm, machine) for arm in reversed(first.values())]


def calibrate_arm(arm: Arm, machine: Machine) -> Calibration:
    """Times a few training steps and a dev evaluation of the arm's encoder on this host (module docstring)."""
    started, threads = time.perf_counter(), torch.get_num_threads()
    encoder, device, precision, batch_size, max_length = calibration_key(arm, machine)
    config = calibration_config(arm, precision)
    try:
        cold = TrialSession(config, device=device_of(arm))
        cold.setup()
        cold.train_epoch(1)  # start-up ends with the first step, so the caches include its kernels
        del cold
        session = TrialSession(config, device=device_of(arm))
        session.setup()
        time_epoch = trial_loop_epoch(session)
        time_epoch(0)
        tokens_per_s = time_epoch(1)
        session.evaluate()
        evaluated = time.perf_counter()
        session.evaluate()
        eval_tokens_per_s = read_tokens(session.data.dev, batch_size) / (time.perf_counter() - evaluated)
    finally:
        torch.set_num_threads(threads)  # the session set the arm's threads for this process
    return Calibration(
        encoder=encoder, device=device, precision=precision, batch_size=batch_size, max_length=max_length,
        steps=-(-len(session.data.train) // batch_size), train_tokens_per_s=tokens_per_s,
        eval_tokens_per_s=eval_tokens_per_s, setup_s=session.timings.setup, seconds=time.perf_counter() - started,
    )  # fmt: skip


def calibration_config(arm: Arm, precision: str) -> TrialConfig:
    """The calibration's trial: the arm's data cut to `STEPS` batches, its encoder, batch size,
    threads and (resolved) precision, cross-entropy on a softmax head, two epochs, a small dev subset.
    Partition 0: every sampler has it, the cut's single partition too."""
    fixed = arm.fixed
    dataset = DatasetRef.model_validate(fixed["dataset"])
    samplers = tuple(Component.model_validate(sampler) for sampler in fixed["samplers"])
    batch_size = fixed["train"]["batch_size"]
    available = len(prepare_corpus(dataset, samplers, seed=0, partition=0).corpus.train)
    cut = Component(name="low_resource", params={"size": min(available, STEPS * batch_size), "partitions": 1})
    return TrialConfig(
        dataset=dataset,
        samplers=(*samplers, cut),
        encoder=EncoderSettings.model_validate(fixed["encoder"]),
        train=TrainSettings(
            epochs=2,
            batch_size=batch_size,
            warmup_ratio=0.0,
            dev_subset=DEV_SENTENCES,
            threads=arm_threads(arm),
            precision=precision,
        ),
        eval_split=None,
    )
