"""Two-task targets from BIO (Nguyen et al. 2023a, Fig. 1), CE-2T, AUC-2T and COMAUC-2T substeps."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from objective_fakes import make, output_of

from nerplat.objectives import ObjectiveContext
from nerplat.objectives.two_task import TwoTaskTargets

SENTENCE = ["B-PER", "I-PER", "O", "B-LOC", "B-LOC", "I-LOC", "I-LOC", "O"]


def test_targets_from_bio_on_a_hand_made_sentence():
    labels = ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]
    entity, begin = TwoTaskTargets(labels)(torch.tensor([labels.index(t) for t in SENTENCE]))
    assert entity.tolist() == [True, True, False, True, True, True, True, False]
    assert begin.tolist() == [True, False, False, True, True, False, False, False]


def test_targets_of_untyped_labels():
    entity, begin = TwoTaskTargets(["O", "B-ENT", "I-ENT"])(torch.tensor([0, 1, 2, 1]))
    assert entity.tolist() == [False, True, True, True]
    assert begin.tolist() == [False, True, False, True]


def test_non_iob2_labels_are_refused():
    with pytest.raises(ValueError, match="not IOB2"):
        TwoTaskTargets(["O", "S-PER"])


def test_ce_2t_is_bce_on_both_heads(context, batch):
    _, _, labels = batch
    logits = torch.randn(3, 6, 2, generator=torch.Generator().manual_seed(3))
    keep = labels != -100
    gold = labels[keep]
    en, be = (gold != 0).float(), ((gold == 1) | (gold == 3)).float()
    expected = F.binary_cross_entropy_with_logits(logits[keep][:, 0], en) + F.binary_cross_entropy_with_logits(
        logits[keep][:, 1], be
    )
    torch.testing.assert_close(make("ce_2t", context)(output_of(logits, labels), labels), expected)


def test_auc_2t_weighs_the_begin_task_by_lambda(context, batch):
    _, _, labels = batch
    out = output_of(torch.randn(3, 6, 2, generator=torch.Generator().manual_seed(4)), labels)
    one, hundred = make("auc_2t", context, **{"lambda": 1.0}), make("auc_2t", context)
    entity_only = make("auc_2t", context, **{"lambda": 0.0})(out, labels)
    begin = one(out, labels) - entity_only
    torch.testing.assert_close(hundred(out, labels), entity_only + 100 * begin)


def test_auc_2t_imratios_are_the_training_shares_of_each_task(context):
    auc = make("auc_2t", context).auc
    assert auc.entity.imratio == pytest.approx(200 / 1000)
    assert auc.begin.imratio == pytest.approx(140 / 1000)


@pytest.mark.parametrize("loss", ["auc_2t", "comauc_2t"])
def test_prior_free_reaches_both_tasks_and_changes_the_loss(context, batch, loss):
    _, _, labels = batch
    out = output_of(torch.randn(3, 6, 2, generator=torch.Generator().manual_seed(6)), labels)
    printed, default = make(loss, context, prior_free=True), make(loss, context)
    assert printed.auc.entity.prior_free and printed.auc.begin.prior_free
    assert not default.auc.entity.prior_free
    substep = printed.num_substeps - 1
    assert not torch.isclose(printed(out, labels, substep), default(out, labels, substep))


def test_two_task_objectives_refuse_other_heads(context, batch):
    _, _, labels = batch
    with pytest.raises(ValueError, match="expects 2 scores"):
        make("auc_2t", context)(output_of(torch.randn(3, 6, 5), labels), labels)


def test_comauc_2t_runs_k_cross_entropy_substeps_then_one_auc_substep(context, batch):
    _, _, labels = batch
    out = output_of(torch.randn(3, 6, 2, generator=torch.Generator().manual_seed(5)), labels)
    comauc = make("comauc_2t", context, k=2)
    assert comauc.num_substeps == 3
    ce = make("ce_2t", context)(out, labels)
    auc = make("auc_2t", context)(out, labels)
    assert torch.equal(comauc(out, labels, 0), ce) and torch.equal(comauc(out, labels, 1), ce)
    torch.testing.assert_close(comauc(out, labels, 2), auc)
    with pytest.raises(ValueError, match="substep"):
        comauc(out, labels, 3)


def test_context_positive_share_counts_training_words():
    context = ObjectiveContext(["O", "B-X", "I-X"], [6, 3, 1], max_length=8)
    assert context.positive_share([False, True, True]) == pytest.approx(0.4)
