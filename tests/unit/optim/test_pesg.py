"""PESG: equals LibAUC 2.0.1's PESG where they should agree, AdamW groups equal torch's AdamW, and the
dual variable stays feasible."""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

from nerplat.objectives.aucm import AUCMarginLoss
from nerplat.optim import PESG

# clip_value small enough that clipping acts in these steps
HYPER = {"lr": 0.1, "momentum": 0.9, "clip_value": 0.05, "weight_decay": 1e-5, "epoch_decay": 2e-3}


def data(step: int) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(100 + step)
    x = torch.randn(32, 4, generator=generator) * 3
    y = (x[:, 0] + 0.5 * torch.randn(32, generator=generator) > 1.0).long()
    return x, y


def pesg_for(model: nn.Module, loss_fn: AUCMarginLoss, **hyper) -> PESG:
    settings = {**HYPER, **hyper}
    primal = {"params": [*model.parameters(), loss_fn.a, loss_fn.b], "update": "sgd", **settings}
    dual = {"params": [loss_fn.alpha], "lr": settings["lr"], "dual": True}
    return PESG([primal, dual], [loss_fn])


def train(model, loss_fn, optimizer, steps, libauc=False):
    """Steps of AUCM on sigmoid scores; LibAUC's loss takes [N, 1] tensors and auto=False (fixed imratio)."""
    for step in steps:
        x, y = data(step)
        scores = torch.sigmoid(model(x))
        loss = loss_fn(scores, y[:, None], auto=False) if libauc else loss_fn(scores.squeeze(1), y.bool())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def test_equals_libauc_pesg_over_steps_and_a_regulariser_update():
    libauc_losses = pytest.importorskip("libauc.losses")
    libauc_optimizers = pytest.importorskip("libauc.optimizers")
    torch.manual_seed(0)
    theirs_model = nn.Linear(4, 1)
    ours_model = copy.deepcopy(theirs_model)
    theirs_loss = libauc_losses.AUCMLoss(margin=1.0, imratio=0.2, device=torch.device("cpu"))
    ours_loss = AUCMarginLoss(margin=1.0, imratio=0.2)
    theirs = libauc_optimizers.PESG(
        theirs_model.parameters(), loss_fn=theirs_loss, verbose=False, device=torch.device("cpu"), **HYPER
    )
    # LibAUC starts its reference as noise; the paper (and we) start it at the initial point.
    for ref, param in zip(theirs.model_ref, [*theirs_model.parameters(), theirs_loss.a, theirs_loss.b]):
        ref.copy_(param.detach())
    ours = pesg_for(ours_model, ours_loss)

    def run(steps):
        train(theirs_model, theirs_loss, theirs, steps, libauc=True)
        train(ours_model, ours_loss, ours, steps)

    run(range(4))
    theirs.update_regularizer()
    ours.update_regularizer()
    run(range(4, 9))
    for mine, reference in zip(
        [*ours_model.parameters(), ours_loss.a, ours_loss.b, ours_loss.alpha],
        [*theirs_model.parameters(), theirs_loss.a, theirs_loss.b, theirs_loss.alpha],
    ):
        torch.testing.assert_close(mine, reference, rtol=1e-5, atol=1e-6)
    assert ours_loss.alpha.item() > 0


def test_adamw_groups_without_clip_or_epoch_decay_equal_torch_adamw():
    torch.manual_seed(1)
    ours_model = nn.Linear(4, 3)
    torch_model = copy.deepcopy(ours_model)
    ours = PESG([{"params": ours_model.parameters(), "update": "adamw", "lr": 1e-2, "weight_decay": 0.01}], [])
    reference = torch.optim.AdamW(torch_model.parameters(), lr=1e-2, weight_decay=0.01, foreach=False)
    for step in range(5):
        x, _ = data(step)
        for model, optimizer in ((ours_model, ours), (torch_model, reference)):
            optimizer.zero_grad()
            model(x).pow(2).mean().backward()
            optimizer.step()
    for mine, theirs in zip(ours_model.parameters(), torch_model.parameters()):
        torch.testing.assert_close(mine, theirs)


def test_alpha_is_projected_onto_nonnegative_values():
    loss_fn = AUCMarginLoss(margin=1.0, imratio=0.5)
    with torch.no_grad():
        loss_fn.a.fill_(3.0)  # m + b - a < 0: unprojected ascent would make alpha negative
        loss_fn.alpha.fill_(0.5)
    groups = [{"params": [loss_fn.a, loss_fn.b], "lr": 0.0}, {"params": [loss_fn.alpha], "lr": 1.0, "dual": True}]
    optimizer = PESG(groups, [loss_fn])
    for _ in range(3):
        optimizer.zero_grad()
        loss_fn(torch.tensor([0.9, 0.1]), torch.tensor([True, False])).backward()
        optimizer.step()
        assert loss_fn.alpha.item() >= 0.0
    assert loss_fn.alpha.item() == 0.0


def test_alpha_moves_only_when_its_loss_took_part_and_its_grad_is_cleared():
    used, idle = AUCMarginLoss(1.0, 0.5), AUCMarginLoss(1.0, 0.5)
    optimizer = PESG(
        [{"params": [used.a, used.b, idle.a, idle.b], "lr": 0.0}, {"params": [used.alpha, idle.alpha], "dual": True}],
        [used, idle],
    )
    used(torch.tensor([0.9, 0.1]), torch.tensor([True, False])).backward()
    optimizer.step()
    assert used.alpha.item() == pytest.approx(0.1 * 2 * 1.0)  # a = b = 0: ascent 2 (m + b - a)
    assert used.alpha.grad is None
    assert idle.alpha.item() == 0.0


def test_reference_starts_at_initial_point_and_moves_to_the_average_iterate():
    weight = nn.Parameter(torch.tensor([1.0, -1.0]))
    optimizer = PESG([{"params": [weight], "lr": 0.1, "epoch_decay": 0.5}], [])
    assert torch.equal(optimizer.state[weight]["reference"], torch.tensor([1.0, -1.0]))
    iterates = []
    for _ in range(3):
        optimizer.zero_grad()
        weight.sum().backward()
        optimizer.step()
        iterates.append(weight.detach().clone())
    optimizer.update_regularizer()
    torch.testing.assert_close(optimizer.state[weight]["reference"], torch.stack(iterates).mean(0))
    assert optimizer.param_groups[0]["iterates"] == 0


def test_end_epoch_updates_the_reference_every_n_epochs():
    weight = nn.Parameter(torch.ones(2))
    optimizer = PESG([{"params": [weight], "lr": 0.1, "epoch_decay": 0.5}], [], reference_every=2)
    weight.sum().backward()
    optimizer.step()
    optimizer.end_epoch(0)
    assert optimizer.param_groups[0]["iterates"] == 1
    optimizer.end_epoch(1)
    assert optimizer.param_groups[0]["iterates"] == 0


def test_state_dict_round_trip_keeps_reference_and_buffers():
    torch.manual_seed(2)
    model, loss_fn = nn.Linear(4, 1), AUCMarginLoss(1.0, 0.2)
    optimizer = pesg_for(model, loss_fn)
    train(model, loss_fn, optimizer, range(2))
    clone_model, clone_loss = copy.deepcopy(model), copy.deepcopy(loss_fn)
    restored = pesg_for(clone_model, clone_loss)
    restored.load_state_dict(copy.deepcopy(optimizer.state_dict()))  # as from a checkpoint file
    train(model, loss_fn, optimizer, range(2, 4))
    train(clone_model, clone_loss, restored, range(2, 4))
    for mine, theirs in zip(clone_model.parameters(), model.parameters()):
        torch.testing.assert_close(mine, theirs)


def test_dual_group_must_match_the_losses():
    loss_fn = AUCMarginLoss(1.0, 0.5)
    with pytest.raises(ValueError, match="dual group"):
        PESG([{"params": [loss_fn.a, loss_fn.b]}], [loss_fn])


def test_an_all_zero_alpha_gradient_counts_as_not_taking_part():
    """DDP with find_unused_parameters may give unused parameters zero gradients instead of None."""
    used, idle = AUCMarginLoss(1.0, 0.5), AUCMarginLoss(1.0, 0.5)
    optimizer = PESG(
        [{"params": [used.a, used.b, idle.a, idle.b], "lr": 0.0}, {"params": [used.alpha, idle.alpha], "dual": True}],
        [used, idle],
    )
    used(torch.tensor([0.9, 0.1]), torch.tensor([True, False])).backward()
    idle.alpha.grad = torch.zeros(1)
    optimizer.step()
    assert idle.alpha.item() == 0.0 and idle.alpha.grad is None
    assert used.alpha.item() > 0.0
