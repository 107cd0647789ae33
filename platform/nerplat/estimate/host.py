"""What this host offers an arm's trials (CPUs, GPUs, the device label and arithmetic they would
get, with why: `precision_lines`) and the work a trial of an arm does, counted on its data before it runs."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

import torch

from nerplat.config.trial import Component, DatasetRef, EncoderSettings
from nerplat.data.corpus import Sentence
from nerplat.estimate.cost import EpochWork, Machine
from nerplat.models.encoders import load_encoder
from nerplat.objectives.registry import OBJECTIVES
from nerplat.plan.model import Arm
from nerplat.trial.data import prepare_corpus
from nerplat.trial.dev_subset import dev_subset
from nerplat.trial.device import device_label
from nerplat.trial.precision_calibration import HostKey, auto_precision, cached_calibration, resolve_precision
from nerplat.trial.variant import Examples
from nerplat.trial.variant_registry import featurize_for_head

PHASE_NAMES = {"train": "training", "evaluate": "evaluation"}


def this_machine() -> Machine:
    """This machine's CPUs and GPUs, and the device and arithmetic an arm's trials would get here."""

    def label_of(arm: Arm) -> str:
        if arm.resources.gpus_per_worker and not torch.cuda.is_available():
            return "cuda (no GPU on this machine)"
        return device_label(device_of(arm), arm_threads(arm))

    def precision_of(arm: Arm) -> str:
        return resolve_precision(arm.fixed["train"].get("precision", "fp32"), device_of(arm), arm_threads(arm))

    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    return Machine(
        cpus=os.cpu_count() or 1, gpus=gpus, label_of=label_of, precision_of=precision_of, precision_lines=precision_lines
    )


def precision_lines(arms: Sequence[Arm], announce: Callable[[str], None] | None = None) -> list[str]:
    """What `auto` resolves to for the arms that ask for it (training, evaluation), and why, one line per
    distinct answer, then the calibrations behind them: a run's first lines and `plan --cost`'s. Measures
    this host where it has no cached calibration (`announce` is told first)."""
    chosen: dict[str, list[str]] = {}
    keys: list[HostKey] = []
    for arm in arms:
        train, device, threads = arm.fixed["train"], device_of(arm), arm_threads(arm)
        choices = {
            phase: auto_precision(phase, device, threads, announce)
            for phase, field in (("train", "precision"), ("evaluate", "eval_precision"))
            if train.get(field) == "auto"
        }
        if choices:
            text = "; ".join(f"{PHASE_NAMES[phase]} auto: {choice.reason}" for phase, choice in choices.items())
            chosen.setdefault(text, []).append(arm.label)
        if any(choice.measured for choice in choices.values()):
            keys.append(HostKey.here(threads))
    lines = [f"precision of {_arms_text(labels)}: {text}" for text, labels in chosen.items()]
    calibrations = (cached_calibration(key) for key in dict.fromkeys(keys))
    return lines + [calibration.line() for calibration in calibrations if calibration is not None]


def _arms_text(labels: list[str]) -> str:
    shown = ", ".join(labels[:3]) + (f" and {len(labels) - 3} more" if len(labels) > 3 else "")
    return f"arm{'s' * (len(labels) > 1)} {shown}"


def device_of(arm: Arm) -> torch.device:
    """The device an arm's trial computes on here: its GPU where it asks for one and torch sees one."""
    return torch.device("cuda", 0) if arm.resources.gpus_per_worker and torch.cuda.is_available() else torch.device("cpu")


def arm_threads(arm: Arm) -> int:
    """torch threads of an arm's trial: `train.threads`, else the CPUs a worker holds."""
    return arm.fixed["train"].get("threads") or max(1, int(arm.resources.cpus_per_worker))


def epoch_work_on_data(arm: Arm) -> EpochWork:
    """The sub-tokens an epoch of training of the arm's first replicate reads (its sampled split,
    featurized as its head's trials featurize it), the passes a batch of its objective takes on the
    split's labels, and the sub-tokens of its dev subset and of its test split."""
    fixed = arm.fixed
    replicate = arm.replicates[0] if arm.replicates else None
    seed, partition = (replicate.seed, replicate.partition) if replicate else (0, arm.partitions[0])
    samplers = tuple(Component.model_validate(sampler) for sampler in fixed["samplers"])
    corpus = prepare_corpus(DatasetRef.model_validate(fixed["dataset"]), samplers, seed=seed, partition=partition).corpus
    settings = EncoderSettings.model_validate(fixed["encoder"])
    tokenizer = load_encoder(settings, train=corpus.train, seed=seed).tokenizer
    head, labels, batch_size = Component.model_validate(fixed["head"]), corpus.labels(), fixed["train"]["batch_size"]

    def tokens(sentences: Sequence[Sentence] | None) -> float:
        if not sentences:
            return 0.0
        return float(read_tokens(featurize_for_head(head, corpus.name, sentences, tokenizer, settings, labels), batch_size))

    objective = Component.model_validate(fixed["objective"])
    return EpochWork(
        tokens=tokens(corpus.train),
        passes=OBJECTIVES.get(objective.name).config.model_validate(objective.params).substeps(labels),
        dev_tokens=tokens(dev_subset(corpus.dev, fixed["train"].get("dev_subset")) if corpus.dev else None),
        test_tokens=tokens(corpus.test),
    )


def read_tokens(examples: Examples, batch_size: int) -> int:
    """Sub-tokens the encoder reads in one pass over `examples`, counted as trials count
    `train_tokens` (each batch's `real_tokens`): an MRC window once per query, with the query and its
    special tokens, where `token_counts` gives the window's context once."""
    return sum(batch.real_tokens() for batch in examples.batches(batch_size, seed=0))
