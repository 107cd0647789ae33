"""Synthetic replicate frames with the shape `runs.replicate_frame` produces.

For the analysis benchmark and for tests and golden tables: realistic structure (F1 grows with
training size, methods differ by a small fixed effect, seeds add noise) from a fixed seed.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
import polars as pl

from nerplat.analysis.run_frames import IDENTITY_COLUMNS, sampler_family


def synthetic_replicates(
    *,
    datasets: Sequence[str] = ("conll2003",),
    sizes: Sequence[int] = (20, 50, 100),
    methods: Sequence[str] = ("ce", "focal", "mom"),
    encoders: Sequence[str] = ("minilm-l6",),
    heads: Sequence[str] = ("softmax",),
    seeds: int = 3,
    partitions: int = 1,
    types: Sequence[str] = ("LOC", "PER"),
    extra_metrics: Sequence[str] = (),
    split: str = "test",
    seed: int = 0,
) -> pl.DataFrame:
    """One row per (dataset, size, method, encoder, head, seed, partition), metrics in [0, 1].

    Metrics: micro and macro precision/recall/F1, per-type precision/recall/F1/support for `types`,
    `train_sentences` and `train_size_factor`, and any `extra_metrics` (noise around 0.5).
    """
    rng = np.random.default_rng(seed)
    grid = list(itertools.product(datasets, sizes, methods, encoders, heads, range(seeds), range(partitions)))
    dataset, size, method, encoder, head, run_seed, partition = (list(c) for c in zip(*grid))
    n = len(grid)
    size_array = np.asarray(size, dtype=float)
    effect = _effect(method, methods, 0.04) + _effect(encoder, encoders, 0.05) + _effect(head, heads, 0.02)
    effect += _effect(dataset, datasets, -0.1)
    base = 0.9 - 0.6 * np.exp(-size_array / 150.0) + effect

    def noisy(centre: np.ndarray, spread: float = 0.02) -> np.ndarray:
        return np.clip(centre + rng.normal(0.0, spread, n), 0.0, 1.0)

    columns = _identity_columns(dataset, size, method, encoder, head, run_seed, partition, partitions)
    metrics: dict[str, np.ndarray] = {}
    for average, shift in (("micro", 0.0), ("macro", -0.03)):
        precision = noisy(base + shift + 0.02)
        recall = noisy(base + shift - 0.02)
        metrics[f"{split}_{average}_precision"] = precision
        metrics[f"{split}_{average}_recall"] = recall
        metrics[f"{split}_{average}_f1"] = _f1(precision, recall)
    for index, name in enumerate(types):
        precision = noisy(base - 0.05 * index)
        recall = noisy(base - 0.05 * index - 0.03)
        metrics[f"{split}_type_{name}_precision"] = precision
        metrics[f"{split}_type_{name}_recall"] = recall
        metrics[f"{split}_type_{name}_f1"] = _f1(precision, recall)
        metrics[f"{split}_type_{name}_support"] = np.full(n, 100.0 * (index + 1))
    metrics["train_sentences"] = size_array
    metrics["train_size_factor"] = np.ones(n)
    for name in extra_metrics:
        metrics[name] = noisy(np.full(n, 0.5), 0.1)
    columns.update({name: metrics[name] for name in sorted(metrics)})
    frame = pl.DataFrame(columns)
    return frame.select(*IDENTITY_COLUMNS, *sorted(metrics)).with_columns(pl.col("size", "seed", "partition").cast(pl.Int64))


def _identity_columns(
    dataset: list, size: list, method: list, encoder: list, head: list, run_seed: list, partition: list, partitions: int
) -> dict[str, object]:
    """The identity columns of `analysis/run_frames.py`, for runs of the `low_resource` sampler."""
    sampler = [f"low_resource(size={s}, partitions={partitions})" for s in size]
    return {
        "run_id": [f"run-{i:07d}" for i in range(len(size))],
        "arm": [f"{d}/{s}/{m}" for d, s, m in zip(dataset, sampler, method)],
        "method": method,
        "dataset": dataset,
        "sampler": sampler,
        "objective": method,
        "head": head,
        "encoder": encoder,
        "status": ["completed"] * len(size),
        "sampler_label": [f"low_resource-{s}" for s in size],
        "sampler_family": [sampler_family(s) for s in sampler],
        "size": size,
        "seed": run_seed,
        "partition": partition,
    }


def _effect(values: Sequence[str], levels: Sequence[str], span: float) -> np.ndarray:
    """A fixed offset per level, evenly spread over [0, span] in the order the levels are given."""
    offsets = dict(zip(levels, np.linspace(0.0, span, len(levels)) if len(levels) > 1 else [0.0]))
    return np.asarray([offsets[v] for v in values])


def _f1(precision: np.ndarray, recall: np.ndarray) -> np.ndarray:
    total = precision + recall
    return np.divide(2 * precision * recall, total, out=np.zeros_like(total), where=total > 0)
