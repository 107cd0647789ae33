"""Encoder vs head vs AUC state, decayed vs not, each parameter exactly once."""

from __future__ import annotations

import torch
from torch import nn

from nerplat.objectives import ObjectiveContext, build_objective
from nerplat.optim import split_parameters

CONTEXT = ObjectiveContext(["O", "B-X", "I-X"], [8, 1, 1], max_length=8)


class Tagger(nn.Module):
    def __init__(self, width: int = 2):
        super().__init__()
        self.encoder = nn.Sequential(nn.Embedding(10, 4), nn.LayerNorm(4), nn.Linear(4, 4))
        self.head = nn.Linear(4, width)


def names(model: nn.Module, objective: nn.Module, params: list[nn.Parameter]) -> set[str]:
    named = [*model.named_parameters(), *(("objective." + n, p) for n, p in objective.named_parameters())]
    by_id = {id(p): n for n, p in named}
    return {by_id[id(p)] for p in params}


def test_split_by_role_and_decay():
    model, objective = Tagger(), build_objective("auc_2t", {}, CONTEXT)
    split = split_parameters(model, objective)
    assert names(model, objective, split.encoder_decay) == {"encoder.0.weight", "encoder.2.weight"}
    assert names(model, objective, split.encoder_no_decay) == {"encoder.1.weight", "encoder.1.bias", "encoder.2.bias"}
    assert names(model, objective, split.head_decay) == {"head.weight"}
    assert names(model, objective, split.head_no_decay) == {"head.bias"}
    assert names(model, objective, split.auc_state) == {
        "objective.auc.entity.a", "objective.auc.entity.b", "objective.auc.begin.a", "objective.auc.begin.b",
    }
    assert [m.alpha for m in split.auc_losses] == [objective.auc.entity.alpha, objective.auc.begin.alpha]


def test_every_trainable_parameter_once_and_frozen_ones_never():
    model, objective = Tagger(), build_objective("auc_2t", {}, CONTEXT)
    model.encoder[0].weight.requires_grad_(False)
    split = split_parameters(model, objective)
    listed = [
        *split.encoder_decay, *split.encoder_no_decay, *split.head_decay, *split.head_no_decay, *split.auc_state,
        *(m.alpha for m in split.auc_losses),
    ]
    trainable = [p for p in [*model.parameters(), *objective.parameters()] if p.requires_grad]
    assert len(listed) == len({id(p) for p in listed}) == len(trainable)


def test_tied_parameters_count_once_and_a_model_without_encoder_is_all_head():
    model = nn.Sequential(nn.Linear(3, 3), nn.Linear(3, 3))
    model[1].weight = model[0].weight
    split = split_parameters(model, build_objective("ce", {}, CONTEXT))
    assert not split.encoder_decay and not split.encoder_no_decay
    assert len(split.head_decay) == 1 and len(split.head_no_decay) == 2
    assert torch.equal(split.head_decay[0], model[0].weight)
