"""Linear warm-up and decay (transformers' schedule): the factor at every optimiser step, on every group."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from nerplat.optim import learning_rate_schedule


def lrs_over(steps_total: int, warmup_ratio: float, base_lrs=(1.0, 0.1)) -> list[list[float]]:
    weights = [nn.Parameter(torch.zeros(1)) for _ in base_lrs]
    optimizer = torch.optim.SGD([{"params": [w], "lr": lr} for w, lr in zip(weights, base_lrs)])
    scheduler = learning_rate_schedule(optimizer, steps_total, warmup_ratio)
    seen = []
    for _ in range(steps_total + 1):
        seen.append([g["lr"] for g in optimizer.param_groups])
        optimizer.step()
        scheduler.step()
    return seen


def test_warmup_then_linear_decay_to_zero():
    factors = [lrs[0] for lrs in lrs_over(10, 0.2)]
    assert factors == pytest.approx([0.0, 0.5, 1.0, 7 / 8, 6 / 8, 5 / 8, 4 / 8, 3 / 8, 2 / 8, 1 / 8, 0.0])


def test_every_group_is_scaled_by_the_same_factor():
    for encoder_lr, head_lr in lrs_over(10, 0.2):
        assert head_lr == pytest.approx(encoder_lr * 0.1)


def test_warmup_rounds_up_and_zero_warmup_starts_at_full_rate():
    assert [lrs[0] for lrs in lrs_over(4, 0.1)] == pytest.approx([0.0, 1.0, 2 / 3, 1 / 3, 0.0])  # W = ceil(0.4) = 1
    assert [lrs[0] for lrs in lrs_over(4, 0.0)] == pytest.approx([1.0, 0.75, 0.5, 0.25, 0.0])


def test_no_steps_is_refused():
    with pytest.raises(ValueError, match="steps_total"):
        lrs_over(0, 0.1)


@pytest.mark.parametrize(
    "steps_total, warmup_ratio", [(1, 0.0), (4, 0.1), (10, 0.2), (37, 0.06), (100, 0.0), (250, 0.5), (7, 1.0)]
)
def test_the_schedule_equals_transformers_linear_schedule_with_warmup(steps_total, warmup_ratio):
    """Same factor at every step as transformers' with W = ceil(T * warmup_ratio)."""
    import math

    from transformers import get_linear_schedule_with_warmup

    weight = nn.Parameter(torch.zeros(1))
    optimizer = torch.optim.SGD([weight], lr=1.0)
    reference = get_linear_schedule_with_warmup(optimizer, math.ceil(steps_total * warmup_ratio), steps_total)
    factors = []
    for _ in range(steps_total + 1):
        factors.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        reference.step()
    assert [lrs[0] for lrs in lrs_over(steps_total, warmup_ratio, base_lrs=(1.0,))] == factors
