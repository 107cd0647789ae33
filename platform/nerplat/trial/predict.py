"""A tagger's predictions for whole sentences, and their scores against the gold tags.

Evaluation is forward passes only: under `torch.inference_mode`, in the trial's arithmetic
(`trial.device`: a bf16 trial evaluates under bf16 autocast, an fp32 one in fp32), over batches of
windows sorted by length, longest first, so batches pad little. On a CPU a batch's padded
sub-tokens are also bounded (`CPU_EVAL_BATCH_TOKENS`): a split that fits one batch would otherwise
pad every window to its longest. `Inference` carries these settings from the trial (or a served
tagger) to every forward pass. Decoding reads the head's scores in fp32 whatever arithmetic
produced them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import torch

from nerplat.data.corpus import Sentence
from nerplat.metrics import evaluate_tags
from nerplat.models.tagger import Tagger
from nerplat.trial.batching import Batch, ids_to_tags
from nerplat.trial.device import autocast
from nerplat.trial.variant import Examples

# Padded sub-tokens of an evaluation batch on a CPU, the bound under which `models.length_cut.cheapest_cut`
# cuts: batches bounded so scored dev sentences faster than 128-window batches, and a bound of 512
# was slower on many sentences (docs/performance.md, "Figures behind the code's choices"). GPUs keep
# the window count alone: not timed there.
CPU_EVAL_BATCH_TOKENS = 1024


@dataclasses.dataclass(frozen=True)
class Inference:
    """How evaluation's forward passes run: on which device, in which arithmetic, and how its
    length-sorted batches are cut (at most `batch_size` windows and, when set, `max_tokens` padded
    sub-tokens)."""

    device: torch.device
    precision: str = "fp32"
    batch_size: int = 32
    max_tokens: int | None = None

    @classmethod
    def on(cls, device: torch.device, precision: str = "fp32", batch_size: int = 32) -> Inference:
        """Settings for `device`: on a CPU, batches bounded by `CPU_EVAL_BATCH_TOKENS` as well."""
        return cls(device, precision, batch_size, CPU_EVAL_BATCH_TOKENS if device.type == "cpu" else None)


def head_output(tagger: Tagger, batch: Batch, precision: str, device: torch.device):
    """The head's output for `batch` computed in `precision`, its floating-point scores cast to fp32."""
    with autocast(precision, device):
        output = tagger(batch)
    return dataclasses.replace(
        output,
        **{
            field.name: value.float()
            for field in dataclasses.fields(output)
            if isinstance(value := getattr(output, field.name), torch.Tensor) and value.is_floating_point()
        },
    )


def head_outputs(tagger: Tagger, features: Examples, inference: Inference) -> Iterator[tuple[list[int], Any]]:
    """(windows of the batch, the head's output for them) for every evaluation batch of `features`."""
    tagger.eval()
    with torch.inference_mode():
        for batch in features.batches(inference.batch_size, seed=None, max_tokens=inference.max_tokens):
            yield batch.windows.tolist(), head_output(tagger, batch.to(inference.device), inference.precision, inference.device)


def decode_sentences(
    decode: Callable[[Any], list[list[int]]], features: Examples, outputs: Iterable[tuple[list[int], Any]]
) -> list[list[int]]:
    """Label ids per sentence: each batch's output decoded, the windows joined back into sentences."""
    windows: list[int] = []
    predictions: list[list[int]] = []
    for batch_windows, output in outputs:
        predictions += decode(output)
        windows += batch_windows
    return features.join(windows, predictions)


def predict(tagger: Tagger, features: Examples, inference: Inference) -> list[list[int]]:
    """Label ids per sentence for every sentence of `features`."""
    outputs = head_outputs(tagger, features, inference)
    return decode_sentences(tagger.decode, features, outputs)


def evaluate_sentences(
    tagger: Tagger,
    features: Examples,
    sentences: tuple[Sentence, ...],
    labels: list[str],
    inference: Inference,
) -> tuple[dict[str, float], list[list[str]]]:
    """(metrics by name, predicted tags per sentence) of `sentences`, whose features are `features`."""
    predicted = ids_to_tags(predict(tagger, features, inference), labels)
    return evaluate_tags([list(s.tags) for s in sentences], predicted), predicted
