"""The optimiser an objective needs, with its parameter groups and schedule: what the trial loop calls.

Per trial::

    optimizer, scheduler = build_optimizer(model, objective, settings, steps_total)
    # steps_total = epochs * batches_per_epoch * objective.num_substeps

Per batch, for substep in range(objective.num_substeps): forward, ``loss = objective(out, labels,
substep)``, ``optimizer.zero_grad()``, ``loss.backward()``, ``clip_gradients(optimizer,
settings.max_grad_norm)``, ``optimizer.step()``, ``scheduler.step()``. After each epoch:
``end_epoch(optimizer, epoch)``.

Learning rates: the encoder at ``settings.lr``; head weights and loss state at ``settings.head_lr``,
else the objective config's ``default_head_lr`` (0.1 for the AUC objectives, LibAUC's PESG rate),
else ``settings.lr``. All groups follow the same linear warm-up and decay.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn
from torch.optim.lr_scheduler import LambdaLR

from nerplat.config.trial import TrainSettings
from nerplat.objectives.base import Objective, PrimalDualSettings
from nerplat.optim.parameter_groups import ParameterSplit, split_parameters
from nerplat.optim.pdsca import PDSCA
from nerplat.optim.pesg import PESG
from nerplat.optim.primal_dual import PrimalDualOptimizer


def head_learning_rate(objective: Objective, settings: TrainSettings) -> float:
    return settings.head_lr or type(objective.config).default_head_lr or settings.lr


def build_optimizer(
    model: nn.Module, objective: Objective, settings: TrainSettings, steps_total: int
) -> tuple[torch.optim.Optimizer, LambdaLR]:
    """AdamW, PESG or PDSCA as ``type(objective.config).optimizer`` says, plus its lr schedule."""
    split = split_parameters(model, objective)
    kind = type(objective.config).optimizer
    if kind == "adamw":
        optimizer = _adamw(split, settings, head_learning_rate(objective, settings))
    else:
        optimizer = _primal_dual(kind, split, objective.config, settings, head_learning_rate(objective, settings))
    return optimizer, learning_rate_schedule(optimizer, steps_total, settings.warmup_ratio)


def learning_rate_schedule(optimizer: torch.optim.Optimizer, steps_total: int, warmup_ratio: float) -> LambdaLR:
    """transformers' linear warm-up then decay to 0 (the BERT schedule) over `steps_total` optimiser steps,
    W = ceil(steps_total * warmup_ratio) of them warm-up; it scales every parameter group alike."""
    from transformers import get_linear_schedule_with_warmup

    if steps_total < 1:
        raise ValueError(f"steps_total must be >= 1, got {steps_total}")
    return get_linear_schedule_with_warmup(optimizer, math.ceil(steps_total * warmup_ratio), steps_total)


def _groups(split: ParameterSplit, settings: TrainSettings, head_lr: float, encoder: dict, head: dict) -> list[dict]:
    """Named groups (empty ones dropped); ``encoder`` / ``head`` add the optimiser-specific keys."""
    wd = settings.weight_decay
    layout = [
        ("encoder", split.encoder_decay, settings.lr, wd, encoder),
        ("encoder_no_decay", split.encoder_no_decay, settings.lr, 0.0, encoder),
        ("head", split.head_decay, head_lr, wd, head),
        ("head_no_decay", split.head_no_decay, head_lr, 0.0, head),
        ("auc_state", split.auc_state, head_lr, 0.0, head),
    ]
    return [
        {"name": name, "params": params, "lr": lr, "weight_decay": decay, **extra}
        for name, params, lr, decay, extra in layout
        if params
    ]


def _adamw(split: ParameterSplit, settings: TrainSettings, head_lr: float) -> torch.optim.AdamW:
    if split.auc_losses:
        raise ValueError("the objective has AUC dual variables (alpha); AdamW cannot ascend them: use pesg or pdsca")
    groups = _groups(split, settings, head_lr, {}, {})
    # The fused kernel updates all tensors in one pass: on CPU torch's default is a per-tensor loop,
    # which spent a large share of a MiniLM step on the dense embedding (docs/performance.md,
    # "Figures behind the code's choices").
    params = [p for group in groups for p in group["params"]]
    fused = all(p.is_floating_point() and p.device.type in ("cpu", "cuda") for p in params)
    return torch.optim.AdamW(groups, fused=fused)


def _primal_dual(
    kind: str, split: ParameterSplit, config: PrimalDualSettings, settings: TrainSettings, head_lr: float
) -> PrimalDualOptimizer:
    shared: dict[str, Any] = {
        "epoch_decay": config.epoch_decay,
        "clip_value": config.clip_value,
        "momentum": config.momentum,
    }
    if kind == "pdsca":
        shared |= {"inner_lr_scale": config.inner_lr_scale, "weight_average": config.weight_average}
    encoder = {**shared, "update": config.encoder_update}
    head = {**shared, "update": config.head_update}
    groups = _groups(split, settings, head_lr, encoder, head)
    if split.auc_losses:
        groups.append({"name": "auc_dual", "params": [m.alpha for m in split.auc_losses], "lr": head_lr, "dual": True})
    optimizer_class = PDSCA if kind == "pdsca" else PESG
    return optimizer_class(groups, split.auc_losses, reference_every=config.reference_every)


def clip_gradients(optimizer: torch.optim.Optimizer, max_grad_norm: float | None) -> None:
    """Global-norm clipping for AdamW; PESG and PDSCA clip element-wise themselves (`clip_value`)."""
    if max_grad_norm is None or isinstance(optimizer, PrimalDualOptimizer):
        return
    params = [p for g in optimizer.param_groups for p in g["params"] if p.grad is not None]
    torch.nn.utils.clip_grad_norm_(params, max_grad_norm)


def end_epoch(optimizer: torch.optim.Optimizer, epoch: int) -> None:
    """Per-epoch hook (``epoch`` 0-based): PESG/PDSCA move their proximal reference point."""
    if isinstance(optimizer, PrimalDualOptimizer):
        optimizer.end_epoch(epoch)
