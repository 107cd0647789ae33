"""Every objective trains every parameter it should: encoder, head, CRF transitions, and a, b, alpha."""

from __future__ import annotations

import pytest
import torch
from objective_fakes import TinyTagger, make

from nerplat.objectives import OBJECTIVES

SETUPS = {
    "ce": ({}, 5, False),
    "wce": ({"scheme": "log_ratio", "beta": 2.0}, 5, False),
    "focal": ({"gamma": 2.0}, 5, False),
    "focal_ovr": ({"gamma": 2.0, "form": "one_vs_rest"}, 5, False),
    "dice": ({}, 5, False),
    "dice_sq": ({"form": "squared", "delta": 1e-5}, 5, False),
    "mom": ({"lambda": 0.2, "base": "focal"}, 5, False),
    "crf": ({}, 5, True),
    "ce_2t": ({}, 2, False),
    "auc_2t": ({}, 2, False),
    "comauc_2t": ({"k": 1}, 2, False),
    "ova_bce": ({}, 5, False),
    "ova_auc": ({}, 5, False),
    "ova_auc_maml": ({"m": 5}, 5, False),
}


def test_every_registered_objective_has_a_gradient_setup():
    word_level = {name for name in OBJECTIVES.names() if not name.startswith("mrc_")}  # MRC: test_mrc_base.py
    assert {name.removesuffix("_ovr").removesuffix("_sq") for name in SETUPS} == word_level


@pytest.mark.parametrize("setup", sorted(SETUPS))
def test_gradients_reach_every_trainable_parameter(setup, context, batch):
    params, width, crf = SETUPS[setup]
    torch.manual_seed(0)
    model = TinyTagger(width, crf=crf)
    objective = make(setup.removesuffix("_ovr").removesuffix("_sq"), context, **params)
    ids, mask, labels = batch
    for substep in range(objective.num_substeps):
        loss = objective(model(ids, mask), labels, substep)
        assert torch.isfinite(loss)
        loss.backward()
    named = list(model.named_parameters()) + [(f"objective.{n}", p) for n, p in objective.named_parameters()]
    missing = [name for name, p in named if p.grad is None or p.grad.abs().sum() == 0]
    assert not missing, f"{setup}: no gradient for {missing}"


def test_auc_objectives_own_a_b_alpha_per_task(context):
    assert len(list(make("auc_2t", context).parameters())) == 6
    assert len(list(make("ova_auc", context).parameters())) == 15
    assert not list(make("mom", context).parameters())


def test_crf_objective_needs_a_crf_head(context, batch):
    ids, mask, labels = batch
    with pytest.raises(ValueError, match="CRF head"):
        make("crf", context)(TinyTagger(5)(ids, mask), labels)


def test_crf_objective_is_mean_sentence_nll(context, batch):
    ids, mask, labels = batch
    model = TinyTagger(5, crf=True)
    out = model(ids, mask)
    per_sentence = model.crf.nll(out.scores, labels.clamp(min=0), mask)
    torch.testing.assert_close(make("crf", context)(out, labels), per_sentence.mean())
