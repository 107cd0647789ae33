"""What one trial needs, fully resolved: no search spaces, no profiles, no environment variables.

The compiler fills these from a spec; the runner adds sampled hyper-parameters, a seed and a
partition; `nerplat.trial` trains from exactly this. Every field is plain data so a TrialConfig
round-trips through JSON (MLflow params, Ray configs, resume).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Component(Frozen):
    """A registry entry named by a spec, with its (concrete) parameters."""

    name: str
    params: dict[str, Any] = Field(default_factory=dict)


class DatasetRef(Frozen):
    """A corpus: a registry name ("conll2003", "hf:eriktks/conll2003") or a folder of CoNLL files."""

    name: str | None = None
    path: str | None = None
    iob1: Literal["convert", "refuse"] = "convert"
    dev_from_train: float | None = None  # carve a seeded dev split from train when the corpus has none


class EncoderSettings(Frozen):
    name: str = "minilm-l6"
    max_length: int = Field(128, ge=16, le=4096)
    window_stride: int = Field(32, ge=0, description="Sub-tokens of overlap between windows of long sentences.")


class TrainSettings(Frozen):
    epochs: int = Field(10, ge=1)
    batch_size: int = Field(32, ge=1)
    lr: float = Field(5e-5, gt=0, description="Learning rate of the pretrained encoder.")
    head_lr: float | None = Field(None, gt=0, description="Learning rate of heads and loss state; default lr.")
    weight_decay: float = Field(0.01, ge=0)
    warmup_ratio: float = Field(0.1, ge=0, le=1)
    max_grad_norm: float | None = Field(1.0, gt=0)
    eval_every: int = Field(1, ge=1, description="Evaluate on dev every this many epochs (and after the last).")
    dev_subset: int | None = Field(None, ge=1, description="Tune on a fixed, seeded sample of this many dev sentences.")
    threads: int | None = Field(None, ge=1, description="torch intra-op threads; default: the CPUs given to the worker.")


class TrialConfig(Frozen):
    dataset: DatasetRef
    samplers: tuple[Component, ...] = ()
    encoder: EncoderSettings = EncoderSettings()
    head: Component = Component(name="softmax")
    objective: Component = Component(name="ce")
    train: TrainSettings = TrainSettings()
    seed: int = 0
    partition: int = 0
    eval_split: Literal["dev", "test"] = "test"
