"""A short calibration run: this host's training and evaluation speed for an arm's encoder and
head, where the MLflow store has no earlier runs of its encoder on this device in its arithmetic.

A trial session of the arm's dataset and samplers, cut to `STEPS` batches of its batch size
(a `low_resource` draw of that many sentences), with the arm's encoder, max_length, threads, head and
the arithmetic `auto` resolves to here, trains for two epochs (`calibration_model`: cross-entropy
where it trains the head, else the arm's own objective, as a CRF head's likelihood); the second is
timed (`bench.train.trial_loop_epoch`: the first allocates the optimiser's state), then a dev
evaluation of `DEV_SENTENCES` twice, the second timed (the first builds the kernels of its shapes,
as a trial's first evaluation does once for all its epochs). Start-up is that of a second session,
after a first one filled this process's caches (corpus, features, kernels): the prediction charges it
to every trial, and only a run's first trial starts cold. The speed is given per pass a batch (the
measured speed times the passes of the objective it trained): the prediction multiplies by the
passes of the arm's objective.
"""

from __future__ import annotations

import time

import torch

from nerplat.bench.train import trial_loop_epoch
from nerplat.config.trial import Component, DatasetRef, EncoderSettings, TrainSettings, TrialConfig
from nerplat.estimate.cost import Calibration, Machine, calibration_key
from nerplat.estimate.host import arm_threads, device_of, read_tokens
from nerplat.models.heads import HEADS
from nerplat.models.heads.base import HeadConfig
from nerplat.objectives.registry import OBJECTIVES
from nerplat.plan.model import Arm
from nerplat.trial.data import prepare_corpus
from nerplat.trial.variant_registry import session_for

STEPS = 6  # training steps of each of the two epochs
DEV_SENTENCES = 64


def calibrate(arms: list[Arm], machine: Machine) -> list[Calibration]:
    """One calibration per encoder, device, arithmetic, batch size, max_length and head among `arms`."""
    first = {calibration_key(arm, machine): arm for arm in reversed(arms)}
    return [calibrate_arm(arm, machine) for arm in reversed(first.values())]


def calibrate_arm(arm: Arm, machine: Machine) -> Calibration:
    """Times a few training steps and a dev evaluation of the arm's encoder and head on this host (module docstring)."""
    started, threads = time.perf_counter(), torch.get_num_threads()
    encoder, device, precision, batch_size, max_length, head = calibration_key(arm, machine)
    config = calibration_config(arm, precision)
    session_class = session_for(config.head)
    try:
        cold = session_class(config, device=device_of(arm))
        cold.setup()
        cold.train_epoch(1)  # start-up ends with the first step, so the caches include its kernels
        del cold
        session = session_class(config, device=device_of(arm))
        session.setup()
        time_epoch = trial_loop_epoch(session)
        time_epoch(0)
        tokens_per_s = time_epoch(1) * session.objective.num_substeps  # a batch's tokens are counted once
        session.evaluate()
        evaluated = time.perf_counter()
        session.evaluate()
        eval_tokens_per_s = read_tokens(session.data.dev, batch_size) / (time.perf_counter() - evaluated)
    finally:
        torch.set_num_threads(threads)  # the session set the arm's threads for this process
    trained = f"{head} by {config.objective.name}"
    if config.head.name != arm.fixed["head"]["name"]:
        trained = f"{config.head.name} by {config.objective.name}, standing in for {head} (fitted outside the torch loop)"
    return Calibration(
        encoder=encoder, device=device, precision=precision, batch_size=batch_size, max_length=max_length,
        head=head, trained=trained, steps=-(-len(session.data.train) // batch_size), train_tokens_per_s=tokens_per_s,
        eval_tokens_per_s=eval_tokens_per_s, setup_s=session.timings.setup, seconds=time.perf_counter() - started,
    )  # fmt: skip


def calibration_model(arm: Arm) -> tuple[Component, Component]:
    """The head and objective a calibration of the arm trains: its head, by cross-entropy where that
    trains it (one calibration stands for every objective of its head: cross-entropy is the common
    one-pass loss of softmax heads), else by the arm's own objective (a CRF head's likelihood; the
    OVA, two-task and MRC losses). A head fitted outside the torch loop (crfsuite) has no steps to
    time: a softmax head trained by cross-entropy stands in for it."""
    head, ce = Component.model_validate(arm.fixed["head"]), Component(name="ce")
    if not issubclass(HEADS.get(head.name).config, HeadConfig):
        return Component(name="softmax"), ce
    if head.name in OBJECTIVES.get(ce.name).config.heads:
        return head, ce
    return head, Component.model_validate(arm.fixed["objective"])


def calibration_config(arm: Arm, precision: str) -> TrialConfig:
    """The calibration's trial: the arm's data cut to `STEPS` batches, its encoder, batch size,
    threads and (resolved) precision, its head and the objective `calibration_model` gives, two
    epochs, a small dev subset. Partition 0: every sampler has it, the cut's single partition too."""
    fixed = arm.fixed
    head, objective = calibration_model(arm)
    dataset = DatasetRef.model_validate(fixed["dataset"])
    samplers = tuple(Component.model_validate(sampler) for sampler in fixed["samplers"])
    batch_size = fixed["train"]["batch_size"]
    available = len(prepare_corpus(dataset, samplers, seed=0, partition=0).corpus.train)
    cut = Component(name="low_resource", params={"size": min(available, STEPS * batch_size), "partitions": 1})
    return TrialConfig(
        dataset=dataset,
        samplers=(*samplers, cut),
        encoder=EncoderSettings.model_validate(fixed["encoder"]),
        head=head,
        objective=objective,
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
