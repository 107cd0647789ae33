"""build_optimizer: the optimiser each objective asks for, its groups and rates; clip and epoch hooks."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from nerplat.config.trial import TrainSettings
from nerplat.models.heads.base import HeadOutput
from nerplat.objectives import OBJECTIVES, ObjectiveContext, build_objective
from nerplat.optim import PDSCA, PESG, build_optimizer, clip_gradients, end_epoch, split_parameters
from nerplat.optim.factory import _adamw

CONTEXT = ObjectiveContext(["O", "B-X", "I-X", "B-Y", "I-Y"], [70, 10, 5, 10, 5], max_length=8)
WIDTH = {"two_task": 2}


class CRF(nn.Module):
    def __init__(self):
        super().__init__()
        self.transitions = nn.Parameter(torch.zeros(5, 5))

    def nll(self, emissions, tags, mask):  # enough for a step: a differentiable per-sentence value
        gold = emissions.log_softmax(-1).gather(-1, tags[..., None]).squeeze(-1)
        return -(gold * mask).sum(-1) + self.transitions.sum()


class Tagger(nn.Module):
    def __init__(self, width: int, crf: bool = False):
        super().__init__()
        self.encoder = nn.Sequential(nn.Embedding(20, 6), nn.LayerNorm(6))
        self.head = nn.Linear(6, width)
        self.crf = CRF() if crf else None

    def forward(self, ids):
        return HeadOutput(self.head(self.encoder(ids)), torch.ones_like(ids, dtype=torch.bool), self.crf)


def setup(name: str, **params):
    config = OBJECTIVES.get(name).config
    model = Tagger(WIDTH.get(config.default_head, 5), crf=config.default_head == "crf")
    return model, build_objective(name, params, CONTEXT)


def groups(optimizer) -> dict[str, dict]:
    return {g.get("name"): g for g in optimizer.param_groups}


def test_cross_entropy_gets_adamw_with_encoder_and_head_rates():
    model, objective = setup("ce")
    settings = TrainSettings(lr=3e-5, head_lr=1e-3, weight_decay=0.05, warmup_ratio=0.0)
    optimizer, scheduler = build_optimizer(model, objective, settings, steps_total=10)
    assert type(optimizer) is torch.optim.AdamW
    by_name = groups(optimizer)
    assert set(by_name) == {"encoder", "encoder_no_decay", "head", "head_no_decay"}
    assert by_name["encoder"]["lr"] == 3e-5 and by_name["encoder"]["weight_decay"] == 0.05
    assert by_name["encoder_no_decay"]["weight_decay"] == 0.0
    assert by_name["head"]["lr"] == 1e-3 and by_name["head_no_decay"]["lr"] == 1e-3
    assert by_name["head"]["params"] == [model.head.weight]


def test_head_rate_defaults_to_the_encoder_rate_for_adamw_objectives():
    model, objective = setup("mom")
    optimizer, _ = build_optimizer(model, objective, TrainSettings(lr=2e-5, warmup_ratio=0.0), steps_total=5)
    assert {g["lr"] for g in optimizer.param_groups} == {2e-5}


def test_auc_2t_gets_pesg_with_adamw_encoder_and_sgd_head_at_libauc_rate():
    model, objective = setup("auc_2t")
    optimizer, _ = build_optimizer(model, objective, TrainSettings(lr=5e-5, warmup_ratio=0.0), steps_total=5)
    assert type(optimizer) is PESG
    by_name = groups(optimizer)
    assert by_name["encoder"]["update"] == "adamw" and by_name["encoder"]["lr"] == 5e-5
    assert by_name["head"]["update"] == "sgd" and by_name["head"]["lr"] == 0.1
    assert by_name["auc_state"]["update"] == "sgd" and len(by_name["auc_state"]["params"]) == 4
    assert by_name["auc_dual"]["dual"] and by_name["auc_dual"]["lr"] == 0.1
    assert by_name["head"]["epoch_decay"] == 2e-3 and by_name["head"]["momentum"] == 0.9


def test_naive_pesg_recipe_is_expressible():
    model, objective = setup("auc_2t", encoder_update="sgd")
    settings = TrainSettings(lr=0.1, head_lr=0.1, warmup_ratio=0.0)
    optimizer, _ = build_optimizer(model, objective, settings, steps_total=5)
    assert {(g["update"], g["lr"]) for g in optimizer.param_groups if not g["dual"]} == {("sgd", 0.1)}


def test_comauc_2t_gets_pdsca_with_its_inner_settings():
    model, objective = setup("comauc_2t", inner_lr_scale=0.5, weight_average=0.9)
    optimizer, _ = build_optimizer(model, objective, TrainSettings(head_lr=0.05, warmup_ratio=0.0), steps_total=5)
    assert type(optimizer) is PDSCA
    head = groups(optimizer)["head"]
    assert (head["inner_lr_scale"], head["weight_average"], head["momentum"], head["lr"]) == (0.5, 0.9, 0.999, 0.05)


# MRC losses read the mrc head's start/end/match output; tests/unit/objectives/test_mrc_base.py trains them.
SEQUENCE_LABELLING = [n for n in OBJECTIVES.names() if "mrc" not in OBJECTIVES.get(n).config.heads]


@pytest.mark.parametrize("name", SEQUENCE_LABELLING)
def test_every_objective_trains_one_batch_through_its_optimizer(name):
    model, objective = setup(name)
    settings = TrainSettings(warmup_ratio=0.0)
    optimizer, scheduler = build_optimizer(model, objective, settings, steps_total=objective.num_substeps)
    before = [p.detach().clone() for p in model.parameters()]
    ids = torch.randint(0, 20, (2, 5), generator=torch.Generator().manual_seed(0))
    labels = torch.tensor([[0, 1, 2, 0, 3], [3, 4, 0, 0, 1]])
    for substep in range(objective.num_substeps):
        loss = objective(model(ids), labels, substep)
        optimizer.zero_grad()
        loss.backward()
        clip_gradients(optimizer, settings.max_grad_norm)
        optimizer.step()
        scheduler.step()
    end_epoch(optimizer, 0)
    assert all(not torch.equal(b, p) for b, p in zip(before, model.parameters()))


def test_clip_gradients_bounds_the_global_norm_for_adamw_only():
    model, objective = setup("ce")
    optimizer, _ = build_optimizer(model, objective, TrainSettings(), steps_total=5)
    for p in model.parameters():
        p.grad = torch.full_like(p, 10.0)
    clip_gradients(optimizer, 1.0)
    norm = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(p.grad) for p in model.parameters()]))
    assert norm.item() == pytest.approx(1.0, rel=1e-4)
    model, objective = setup("auc_2t")
    optimizer, _ = build_optimizer(model, objective, TrainSettings(), steps_total=5)
    model.head.weight.grad = torch.full_like(model.head.weight, 10.0)
    clip_gradients(optimizer, 1.0)
    assert model.head.weight.grad.max().item() == 10.0  # PESG clips element-wise inside its step


def test_end_epoch_moves_the_pesg_reference():
    model, objective = setup("ova_auc")
    optimizer, _ = build_optimizer(model, objective, TrainSettings(), steps_total=5)
    model.head.weight.grad = torch.ones_like(model.head.weight)
    optimizer.step()
    end_epoch(optimizer, 0)
    assert torch.equal(optimizer.state[model.head.weight]["reference"], model.head.weight.detach())


def test_adamw_refuses_an_objective_with_duals():
    model, objective = setup("auc_2t")  # its config asks for pesg: force AdamW on it
    with pytest.raises(ValueError, match="cannot ascend"):
        _adamw(split_parameters(model, objective), TrainSettings(), 1e-3)
