"""What one trial needs, fully resolved: no search spaces, no profiles, no environment variables.

The compiler fills these from a spec; the runner adds sampled hyper-parameters, a seed and a
partition; `nerplat.trial` trains from exactly this. Every field is plain data so a TrialConfig
round-trips through JSON (MLflow params, Ray configs, resume).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from nerplat.config.frozen import Frozen

# Upper bounds of counts a spec gives, far beyond any real run: `epochs: 99999999999999999999999999`
# validated once and trained until killed.
MAX_EPOCHS = 10_000
MAX_THREADS = 1024


class Component(Frozen):
    """A registry entry named by a spec, with its (concrete) parameters."""

    name: str = Field(description="Registered name of the entry.")
    params: dict[str, Any] = Field(default_factory=dict, description="Parameters of the entry's config model.")


class FileSplit(Frozen):
    """How one corpus file is cut into train, dev and test: seeded shares of its sentences."""

    dev: float = Field(0.1, ge=0, lt=1, description="Share of the file's sentences drawn as the dev split (0: none).")
    test: float = Field(0.1, gt=0, lt=1, description="Share of the file's sentences drawn as the test split.")
    seed: int = Field(
        0, ge=0, description="Seed of the draw: the corpus's, never a trial's, so every replicate sees the same splits."
    )

    @model_validator(mode="after")
    def _train_left(self) -> "FileSplit":
        if self.dev + self.test >= 1:
            raise ValueError(f"dev {self.dev} and test {self.test} leave no sentence to train on: make their sum below 1")
        return self


class DatasetRef(Frozen):
    """A corpus: a registry name ("conll2003", "hf:eriktks/conll2003"), a folder of split files in a
    format, or one file in a format with the `split` that carves its dev and test splits."""

    name: str | None = Field(None, description="Registered corpus name, or hf:<hub id or folder saved by datasets>.")
    path: str | None = Field(None, description="Folder with train/dev/test files in `format`, or one file (with `split`).")
    format: Component = Field(Component(name="conll"), description="Corpus format of a folder's files (registry `formats`).")
    iob1: Literal["convert", "refuse"] = Field("convert", description="What to do with IOB1-tagged input.")
    dev_from_train: float | None = Field(
        None, gt=0, lt=1, description="Carve a seeded dev split of this share from train when the corpus has none."
    )
    split: FileSplit | None = Field(
        None,
        exclude_if=lambda split: split is None,  # plans of folder corpora keep the hash they had before it existed
        description="For a path that is one file: the seeded shares of it drawn as dev and test, e.g. "
        "{dev: 0.1, test: 0.1, seed: 0}.",
    )


class EncoderSettings(Frozen):
    name: str = Field("minilm-l6", description="Registered encoder name, Hugging Face model id or local folder.")
    max_length: int = Field(128, ge=16, le=4096, description="Sub-tokens per window, special tokens included.")
    window_stride: int = Field(32, ge=0, description="Sub-tokens of overlap between windows of long sentences.")


class EarlyStopping(Frozen):
    """Stop a trial at its dev plateau instead of at `train.epochs`, which stays the cap and the span the
    learning-rate schedule is planned over (so a stopped run trained exactly as the capped run up to there)."""

    patience: int = Field(
        ge=1, description="Dev evaluations in a row without an improvement of more than min_delta that stop the trial."
    )
    min_delta: float = Field(
        0.0, ge=0, description="How much the selection metric must rise above its best so far to count as an improvement."
    )


class TrainSettings(Frozen):
    epochs: int = Field(
        10, ge=1, le=MAX_EPOCHS, description="Passes over the (sampled) training set; with early_stopping, the cap."
    )
    batch_size: int = Field(32, ge=1, description="Sentences per optimiser step (over all workers).")
    lr: float = Field(5e-5, gt=0, description="Learning rate of the pretrained encoder.")
    head_lr: float | None = Field(None, gt=0, description="Learning rate of heads and loss state; default lr.")
    weight_decay: float = Field(0.01, ge=0, description="AdamW weight decay.")
    warmup_ratio: float = Field(0.1, ge=0, le=1, description="Share of steps with linear learning-rate warm-up.")
    max_grad_norm: float | None = Field(1.0, gt=0, description="Gradient-norm clipping; none: no clipping.")
    eval_every: int = Field(
        1, ge=1, le=MAX_EPOCHS, description="Evaluate on dev every this many epochs (and after the last)."
    )
    dev_subset: int | None = Field(None, ge=1, description="Tune on a fixed, seeded sample of this many dev sentences.")
    threads: int | None = Field(
        None, ge=1, le=MAX_THREADS, description="torch intra-op threads; default: the CPUs given to the worker."
    )
    precision: Literal["fp32", "bf16", "fp16", "auto"] = Field(
        "fp32",
        description="Arithmetic of forward passes: fp32, or bf16/fp16 under torch.autocast (fp16 with a gradient "
        "scaler; GPU only); auto: bf16 where this host measured it at least 1.10x faster than fp32 (timed once on "
        "CPUs with AVX512-BF16 or AMX, cached; GPUs of compute capability 8.0 and later), else fp32, recorded on "
        "each run as the tag nerplat.precision. "
        "Weights and optimiser state stay fp32.",
    )
    eval_precision: Literal["fp32", "bf16", "fp16", "auto"] | None = Field(
        None,
        description="Arithmetic of dev and test forward passes; none: as training. auto: the faster of fp32 and bf16 measured "
        "for evaluation where bf16 has units, bf16 on GPUs of compute capability 8.0 and later, else as training "
        "(a cheaper evaluation of an fp32 model; scores are read in fp32, decoding unchanged).",
    )
    early_stopping: EarlyStopping | None = Field(
        None,
        description="Stop when `patience` dev evaluations brought no improvement of more than `min_delta` in the selection "
        "metric (the best dev epoch's weights are kept); none: train all `epochs`. Each run records the tag "
        "nerplat.stopped_by (patience or cap) and the metric stopped_epoch.",
    )
    tune_threshold: bool = Field(
        False,
        description="Two-task heads: choose the entity and beginning decision thresholds on dev at each evaluation "
        "instead of Nguyen et al. 2023a's fixed 0.5 (AUC-trained scores rank well but are not calibrated).",
    )


class TrialConfig(Frozen):
    dataset: DatasetRef = Field(description="The corpus to train and evaluate on.")
    samplers: tuple[Component, ...] = Field((), description="Samplers applied to train, in order.")
    encoder: EncoderSettings = Field(EncoderSettings(), description="The pretrained encoder and its windowing.")
    head: Component = Field(Component(name="softmax"), description="Head on top of the encoder.")
    objective: Component = Field(Component(name="ce"), description="Training objective (loss).")
    train: TrainSettings = Field(TrainSettings(), description="Optimisation settings.")
    seed: int = Field(0, description="Seed of initialisation, data order and dev subset.")
    partition: int = Field(0, ge=0, description="Partition index for partitioned samplers (low_resource).")
    eval_split: Literal["dev", "test"] | None = Field(
        "test", description="Split of the final evaluation; none for tuning trials, which report dev evaluations only."
    )
