"""What this host offers an arm's trials (CPUs, GPUs, the device label and arithmetic they would
get) and the work a trial of an arm does, counted on its data before it runs."""

from __future__ import annotations

import os

import torch

from nerplat.config.trial import Component, DatasetRef, EncoderSettings
from nerplat.estimate.cost import EpochWork, Machine
from nerplat.models.encoders import load_encoder
from nerplat.objectives.registry import OBJECTIVES
from nerplat.plan.model import Arm
from nerplat.trial.data import prepare_corpus
from nerplat.trial.dev_subset import dev_subset
from nerplat.trial.device import device_label, resolve_precision
from nerplat.trial.variant_registry import featurize_for_head


def this_machine() -> Machine:
    """This machine's CPUs and GPUs, and the device and arithmetic an arm's trials would get here."""

    def label_of(arm: Arm) -> str:
        if arm.resources.gpus_per_worker and not torch.cuda.is_available():
            return "cuda (no GPU on this machine)"
        return device_label(device_of(arm), arm_threads(arm))

    def precision_of(arm: Arm) -> str:
        return resolve_precision(arm.fixed["train"].get("precision", "fp32"), device_of(arm))

    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    return Machine(cpus=os.cpu_count() or 1, gpus=gpus, label_of=label_of, precision_of=precision_of)


def device_of(arm: Arm) -> torch.device:
    """The device an arm's trial computes on here: its GPU where it asks for one and torch sees one."""
    return torch.device("cuda", 0) if arm.resources.gpus_per_worker and torch.cuda.is_available() else torch.device("cpu")


def arm_threads(arm: Arm) -> int:
    """torch threads of an arm's trial: `train.threads`, else the CPUs a worker holds."""
    return arm.fixed["train"].get("threads") or max(1, int(arm.resources.cpus_per_worker))


def epoch_work_on_data(arm: Arm) -> EpochWork:
    """Training sub-tokens of one epoch of the arm's first replicate (its sampled split, windowed as
    trials window it), the passes a batch of its objective takes on the split's labels, and the
    sentences of its dev subset and of its test split."""
    fixed = arm.fixed
    replicate = arm.replicates[0] if arm.replicates else None
    seed, partition = (replicate.seed, replicate.partition) if replicate else (0, arm.partitions[0])
    samplers = tuple(Component.model_validate(sampler) for sampler in fixed["samplers"])
    corpus = prepare_corpus(DatasetRef.model_validate(fixed["dataset"]), samplers, seed=seed, partition=partition).corpus
    settings = EncoderSettings.model_validate(fixed["encoder"])
    tokenizer = load_encoder(settings, train=corpus.train, seed=seed).tokenizer
    features = featurize_for_head(
        Component.model_validate(fixed["head"]), corpus.name, corpus.train, tokenizer, settings, corpus.labels()
    )
    objective = Component.model_validate(fixed["objective"])
    passes = OBJECTIVES.get(objective.name).config.model_validate(objective.params).substeps(corpus.labels())
    return EpochWork(
        tokens=float(features.token_counts().sum()),
        passes=passes,
        dev_sentences=len(dev_subset(corpus.dev, fixed["train"].get("dev_subset"))) if corpus.dev else 0,
        test_sentences=len(corpus.test or ()),
    )
