"""PDSCA equals LibAUC 2.0.1's PDSCA on alternating inner (BCE) and outer (AUCM) steps."""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from nerplat.objectives.aucm import AUCMarginLoss
from nerplat.optim import PDSCA

HYPER = {"lr": 0.1, "clip_value": 0.05, "weight_decay": 1e-5, "epoch_decay": 2e-3}


def data(step: int) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(200 + step)
    x = torch.randn(32, 4, generator=generator) * 3
    return x, (x[:, 1] > 0.8).float()


def pdsca_for(model: nn.Module, loss_fn: AUCMarginLoss, **hyper) -> PDSCA:
    settings = {**HYPER, "momentum": 0.999, "weight_average": 0.99, "inner_lr_scale": 1.0, **hyper}
    primal = {"params": [*model.parameters(), loss_fn.a, loss_fn.b], "update": "sgd", **settings}
    return PDSCA([primal, {"params": [loss_fn.alpha], "lr": settings["lr"], "dual": True}], [loss_fn])


def test_equals_libauc_pdsca_over_alternating_steps():
    libauc_losses = pytest.importorskip("libauc.losses")
    libauc_optimizers = pytest.importorskip("libauc.optimizers")
    torch.manual_seed(3)
    theirs_model = nn.Linear(4, 1)
    ours_model = copy.deepcopy(theirs_model)
    theirs_loss = libauc_losses.CompositionalAUCLoss(margin=1.0, imratio=0.3, k=1, device=torch.device("cpu"))
    ours_loss = AUCMarginLoss(margin=1.0, imratio=0.3)
    theirs = libauc_optimizers.PDSCA(
        theirs_model.parameters(), loss_fn=theirs_loss, beta1=0.99, beta2=0.999, verbose=False,
        device=torch.device("cpu"), **HYPER,
    )
    for ref, param in zip(theirs.model_ref, [*theirs_model.parameters(), theirs_loss.a, theirs_loss.b]):
        ref.copy_(param.detach())
    ours = pdsca_for(ours_model, ours_loss)

    def run(steps):
        for step in steps:
            x, y = data(step)
            # LibAUC's loss alternates by its own counter (even calls BCE, odd calls AUC). Its alpha is
            # not an optimiser parameter, so zero_grad() never clears it: clear it for the BCE steps.
            theirs_loss.alpha.grad = None
            loss = theirs_loss(torch.sigmoid(theirs_model(x)), y[:, None], auto=False)
            theirs.zero_grad()
            loss.backward()
            theirs.step()
            scores = torch.sigmoid(ours_model(x)).squeeze(1)
            loss = F.binary_cross_entropy(scores, y) if step % 2 == 0 else ours_loss(scores, y.bool())
            ours.zero_grad()
            loss.backward()
            ours.step()

    run(range(4))
    theirs.update_regularizer()
    ours.update_regularizer()
    run(range(4, 10))
    for mine, reference in zip(
        [*ours_model.parameters(), ours_loss.a, ours_loss.b, ours_loss.alpha],
        [*theirs_model.parameters(), theirs_loss.a, theirs_loss.b, theirs_loss.alpha],
    ):
        torch.testing.assert_close(mine, reference, rtol=1e-5, atol=1e-6)
    assert ours_loss.alpha.item() > 0


def test_inner_step_uses_the_scaled_rate_and_leaves_a_b_alpha_alone():
    model, loss_fn = nn.Linear(4, 1), AUCMarginLoss(1.0, 0.3)
    optimizer = pdsca_for(model, loss_fn, inner_lr_scale=0.5, weight_average=0.0, epoch_decay=0.0, clip_value=None)
    before = model.weight.detach().clone()
    x, y = data(0)
    F.binary_cross_entropy(torch.sigmoid(model(x)).squeeze(1), y).backward()
    grad = model.weight.grad.clone()
    optimizer.step()
    torch.testing.assert_close(model.weight, before - 0.05 * (grad + 1e-5 * before))
    assert loss_fn.a.item() == loss_fn.b.item() == loss_fn.alpha.item() == 0.0


def test_zero_alpha_gradients_still_mean_an_inner_step():
    model, loss_fn = nn.Linear(4, 1), AUCMarginLoss(1.0, 0.3)
    inner = pdsca_for(model, loss_fn, weight_average=0.0, epoch_decay=0.0, clip_value=None, weight_decay=0.0)
    x, y = data(0)
    F.binary_cross_entropy(torch.sigmoid(model(x)).squeeze(1), y).backward()
    loss_fn.alpha.grad = torch.zeros(1)  # as DDP may leave it
    before, grad = model.weight.detach().clone(), model.weight.grad.clone()
    inner.step()
    torch.testing.assert_close(model.weight, before - 0.1 * grad)
    assert "momentum_buffer" not in inner.state[model.weight]
