"""Linear warm-up then linear decay to 0, the BERT fine-tuning schedule (as transformers'
`get_linear_schedule_with_warmup`), applied to every parameter group of any optimiser here."""

from __future__ import annotations

import math

import torch
from torch.optim.lr_scheduler import LambdaLR


def warmup_steps(steps_total: int, warmup_ratio: float) -> int:
    return math.ceil(steps_total * warmup_ratio)


def linear_warmup_decay(optimizer: torch.optim.Optimizer, steps_total: int, warmup_ratio: float) -> LambdaLR:
    """Factor step/W for step < W, then (T - step)/(T - W), floored at 0; W = ceil(T * warmup_ratio).

    Call ``scheduler.step()`` after every ``optimizer.step()`` (T counts optimiser steps, substeps
    included).
    """
    if steps_total < 1:
        raise ValueError(f"steps_total must be >= 1, got {steps_total}")
    warmup = warmup_steps(steps_total, warmup_ratio)

    def factor(step: int) -> float:
        if step < warmup:
            return step / warmup
        return max(0.0, (steps_total - step) / max(1, steps_total - warmup))

    return LambdaLR(optimizer, factor)
