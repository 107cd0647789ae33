"""Tiny taggers for the serving tests, trained for real (tiny encoder, 24 CoNLL-2003 sentences, one epoch), saved as bundles."""

from __future__ import annotations

from pathlib import Path

from nerplat.config.trial import Component, DatasetRef, EncoderSettings, TrainSettings, TrialConfig
from nerplat.serving.bundle import save_bundle
from nerplat.trial.loop import run_trial
from nerplat.trial.results import TrainedTagger

LOSSES = {"softmax": "ce", "crf": "crf", "two_task": "auc_2t", "ova": "ova_auc"}


def tiny_config(head: str, max_length: int = 48, encoder: str = "tiny") -> TrialConfig:
    samplers = [Component(name="low_resource", params={"size": 24, "partitions": 1})]
    if head == "two_task":
        samplers.insert(0, Component(name="untyped"))
    return TrialConfig(
        dataset=DatasetRef(name="conll2003"),
        samplers=tuple(samplers),
        encoder=EncoderSettings(name=encoder, max_length=max_length, window_stride=8),
        head=Component(name=head),
        objective=Component(name=LOSSES[head]),
        train=TrainSettings(epochs=1, batch_size=8, lr=1e-3, dev_subset=40, threads=1),
        eval_split="dev",
    )


def train_tagger(config: TrialConfig) -> TrainedTagger:
    """Trains a tagger with `run_trial` and returns what its `keep_model` hook hands over."""
    kept = []
    run_trial(config, keep_model=kept.append)
    assert len(kept) == 1
    return kept[0]


def train_bundle(head: str, directory: Path) -> Path:
    """Trains a tiny tagger and saves it as a bundle in `directory / head`."""
    config = tiny_config(head)
    trained = train_tagger(config)
    return save_bundle(directory / head, trained.tagger, trained.tokenizer, trained.labels, config.head, config.encoder)


SENTENCES = [
    ["EU", "rejects", "German", "call", "to", "boycott", "British", "lamb", "."],
    ["Peter", "Blackburn"],
    [],
    ["BRUSSELS", "1996-08-22"],
]
