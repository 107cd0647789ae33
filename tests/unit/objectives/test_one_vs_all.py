"""OVA-BCE, OVA-AUC's B/I/O groups (Nguyen et al. 2023b, Alg. 1) and OVA-AUC-MAML's seeded sampling (Alg. 2)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from objective_fakes import LABELS, make, output_of

from nerplat.errors import UserInputError
from nerplat.objectives import ObjectiveContext
from nerplat.objectives.ova_auc import prefix_groups


def test_groups_partition_labels_by_prefix_in_b_i_o_order():
    labels = ["O", "B-LOC", "I-LOC", "B-MISC", "I-MISC", "B-PER", "I-PER"]
    groups = prefix_groups(labels)
    assert groups == [[1, 3, 5], [2, 4, 6], [0]]
    assert sorted(k for g in groups for k in g) == list(range(len(labels)))
    assert prefix_groups(["O", "B-ENT", "I-ENT"]) == [[1], [2], [0]]


def test_ova_auc_substep_loss_is_the_sum_over_its_group(context, batch):
    _, _, labels = batch
    out = output_of(torch.randn(3, 6, 5, generator=torch.Generator().manual_seed(6)), labels)
    ova = make("ova_auc", context)
    assert ova.num_substeps == 3
    keep = labels != -100
    scores, gold = torch.sigmoid(out.scores[keep]), labels[keep]
    per_label = [ova.margins.per_label[k](scores[:, k], gold == k) for k in range(5)]
    for substep, group in enumerate([[1, 3], [2, 4], [0]]):
        torch.testing.assert_close(ova(out, labels, substep), sum(per_label[k] for k in group))


def test_ova_auc_substep_trains_only_its_group_state(context, batch):
    _, _, labels = batch
    scores = torch.randn(3, 6, 5, requires_grad=True)
    ova = make("ova_auc", context)
    ova(output_of(scores, labels), labels, substep=1).backward()
    touched = [k for k, loss_fn in enumerate(ova.margins.per_label) if loss_fn.alpha.grad is not None]
    assert touched == [2, 4]


def test_ova_imratios_are_label_shares(context):
    shares = [m.imratio for m in make("ova_auc", context).margins.per_label]
    assert shares == pytest.approx([0.8, 0.06, 0.02, 0.08, 0.04])


def test_ova_bce_is_summed_binary_cross_entropy(context, batch):
    _, _, labels = batch
    scores = torch.randn(3, 6, 5, generator=torch.Generator().manual_seed(7))
    keep = labels != -100
    expected = (
        F.binary_cross_entropy_with_logits(scores[keep], F.one_hot(labels[keep], 5).float(), reduction="none")
        .sum(-1)
        .mean()
    )
    torch.testing.assert_close(make("ova_bce", context)(output_of(scores, labels), labels), expected)


def test_maml_sampling_is_deterministic_by_seed_and_step(context):
    first, second = make("ova_auc_maml", context, m=2), make("ova_auc_maml", context, m=2)
    draws = [first.sampled_labels(t) for t in range(20)]
    assert draws == [second.sampled_labels(t) for t in range(20)]
    assert all(len(set(d)) == 2 and all(0 <= k < 5 for k in d) for d in draws)
    assert len({tuple(sorted(d)) for d in draws}) > 3
    other_seed = ObjectiveContext(list(LABELS), context.label_counts, context.max_length, seed=8)
    assert [make("ova_auc_maml", other_seed, m=2).sampled_labels(t) for t in range(20)] != draws


def test_maml_training_steps_follow_the_sampled_labels_and_resume(context, batch):
    _, _, labels = batch
    maml = make("ova_auc_maml", context, m=2)
    for step in range(3):
        scores = torch.randn(3, 6, 5, requires_grad=True)
        maml(output_of(scores, labels), labels).backward()
        touched = {k for k, loss_fn in enumerate(maml.margins.per_label) if loss_fn.alpha.grad is not None}
        assert touched == set(maml.sampled_labels(step))
        maml.zero_grad(set_to_none=True)
    resumed = make("ova_auc_maml", context, m=2)
    resumed.load_state_dict(maml.state_dict())
    assert int(resumed.steps_taken) == 3


def test_maml_eval_mode_counts_every_label(context, batch):
    _, _, labels = batch
    out = output_of(torch.randn(3, 6, 5, generator=torch.Generator().manual_seed(8)), labels)
    maml, ova = make("ova_auc_maml", context, m=2).eval(), make("ova_auc", context)
    torch.testing.assert_close(maml(out, labels), sum(ova(out, labels, s) for s in range(3)))
    assert int(maml.steps_taken) == 0


def test_maml_refuses_more_labels_than_the_corpus_has(context):
    with pytest.raises(UserInputError, match="m=6"):
        make("ova_auc_maml", context, m=6)


def test_a_label_without_training_words_gets_no_aucm_gradient(batch):
    # Why the ova head leaves such a label out of its argmax: with LibAUC's prior-weighted AUCM ("v1")
    # imratio 0 makes the task's loss identically 0, so its head row stays at initialisation.
    _, _, labels = batch
    labels = torch.where(labels == 2, 0, labels)  # no I-LOC word, as in the training counts
    absent = ObjectiveContext(list(LABELS), [800, 60, 0, 80, 40], max_length=16)
    scores = torch.randn(3, 6, 5, requires_grad=True)
    ova = make("ova_auc", absent)
    sum(ova(output_of(scores, labels), labels, substep) for substep in range(3)).backward()
    assert ova.margins.per_label[2].imratio == 0.0
    assert torch.all(scores.grad[..., 2] == 0) and torch.any(scores.grad[..., 1] != 0)
