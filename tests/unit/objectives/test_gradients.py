"""Every objective trains every parameter it should: encoder, head, CRF transitions, and a, b, alpha.

Every registered objective is run with each parameter set of its registry entry's `examples`.
"""

from __future__ import annotations

import pytest
import torch
from objective_fakes import TinyTagger, make, registered_examples

from nerplat.objectives import OBJECTIVES

WIDTH = {"two_task": 2}  # scores per word of a head; other heads score every label
CRF_HEADS = {"crf", "bilstm_crf"}


@pytest.mark.parametrize("name,params", registered_examples(mrc=False))  # MRC: test_mrc_base.py
def test_gradients_reach_every_trainable_parameter(name, params, context, batch):
    head = OBJECTIVES.get(name).config.default_head
    torch.manual_seed(0)
    model = TinyTagger(WIDTH.get(head, context.num_labels), crf=head in CRF_HEADS)
    objective = make(name, context, **params)
    ids, mask, labels = batch
    for substep in range(objective.num_substeps):
        loss = objective(model(ids, mask), labels, substep)
        assert torch.isfinite(loss)
        loss.backward()
    named = list(model.named_parameters()) + [(f"objective.{n}", p) for n, p in objective.named_parameters()]
    missing = [n for n, p in named if p.grad is None or p.grad.abs().sum() == 0]
    assert not missing, f"{name} {params}: no gradient for {missing}"


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
