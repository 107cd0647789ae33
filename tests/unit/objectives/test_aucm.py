"""Our AUC margin loss equals LibAUC 2.0.1's `AUCMLoss` (v1, fixed imratio) on the same inputs and state."""

from __future__ import annotations

import pytest
import torch

from nerplat.objectives.aucm import AUCMarginLoss

libauc_losses = pytest.importorskip("libauc.losses", reason="LibAUC is the oracle (make install adds it)")


@pytest.mark.parametrize("seed", range(5))
def test_equals_libauc_aucm_loss_with_fixed_imratio(seed):
    generator = torch.Generator().manual_seed(seed)
    scores = torch.rand(40, generator=generator)
    positive = torch.rand(40, generator=generator) < 0.3
    state = torch.randn(3, generator=generator)
    ours = AUCMarginLoss(margin=0.8, imratio=0.17)
    theirs = libauc_losses.AUCMLoss(margin=0.8, imratio=0.17, device=torch.device("cpu"))
    with torch.no_grad():
        for module in (ours, theirs):
            module.a.fill_(state[0].item())
            module.b.fill_(state[1].item())
            module.alpha.fill_(state[2].abs().item())
    expected = theirs(scores[:, None], positive.long()[:, None], auto=False)
    torch.testing.assert_close(ours(scores, positive), expected.reshape(()))


def test_gradients_reach_a_b_alpha_and_scores():
    loss_fn = AUCMarginLoss(margin=1.0, imratio=0.25)
    scores = torch.tensor([0.9, 0.2, 0.4, 0.1], requires_grad=True)
    loss_fn(scores, torch.tensor([True, False, False, False])).backward()
    for tensor in (scores, loss_fn.a, loss_fn.b, loss_fn.alpha):
        assert tensor.grad is not None and tensor.grad.abs().sum() > 0


def test_state_is_saved_and_moves_with_the_module():
    loss_fn = AUCMarginLoss(margin=1.0, imratio=0.25)
    assert set(loss_fn.state_dict()) == {"a", "b", "alpha"}
    assert loss_fn.to(torch.float64).a.dtype == torch.float64


def test_imratio_outside_unit_interval_is_refused():
    with pytest.raises(ValueError, match="imratio"):
        AUCMarginLoss(margin=1.0, imratio=1.5)


def _prior_free_by_hand(scores, positive, a, b, alpha, margin):
    """Nguyen et al. 2023a, eq. 3c, term by term over the positive and negative words."""
    pos, neg = scores[positive], scores[~positive]
    return (((pos - a) ** 2).mean() + ((neg - b) ** 2).mean()
            + 2 * alpha * (margin + neg.mean() - pos.mean()) - alpha**2)


@pytest.mark.parametrize("seed", range(3))
def test_prior_free_form_is_eq_3c_and_libauc_v2_up_to_its_negative_mean(seed):
    generator = torch.Generator().manual_seed(seed)
    scores = torch.rand(40, generator=generator)
    positive = torch.rand(40, generator=generator) < 0.3
    a, b, alpha = 0.7, 0.2, 0.4
    ours = AUCMarginLoss(margin=0.8, imratio=0.17, prior_free=True)
    theirs = libauc_losses.AUCMLoss(margin=0.8, version="v2", device=torch.device("cpu"))
    with torch.no_grad():
        for module in (ours, theirs):
            module.a.fill_(a)
            module.b.fill_(b)
            module.alpha.fill_(alpha)
    value = ours(scores, positive)
    torch.testing.assert_close(value, _prior_free_by_hand(scores, positive, a, b, alpha, 0.8))
    # LibAUC's v2 takes the negatives' score sum over the whole batch, not over the negatives
    negatives = scores[~positive]
    libauc_negative_mean = negatives.sum() / len(scores)
    expected = theirs(scores[:, None], positive.long()[:, None]).reshape(())
    torch.testing.assert_close(value, expected + 2 * alpha * (negatives.mean() - libauc_negative_mean))


def test_prior_free_form_ignores_imratio_and_a_batch_without_positives_adds_no_positive_term():
    scores = torch.tensor([0.9, 0.2, 0.4, 0.1])
    negatives = torch.zeros(4, dtype=torch.bool)
    one = AUCMarginLoss(margin=1.0, imratio=0.1, prior_free=True)
    other = AUCMarginLoss(margin=1.0, imratio=0.6, prior_free=True)
    with torch.no_grad():
        for module in (one, other):
            module.b.fill_(0.3)
            module.alpha.fill_(0.5)
    expected = ((scores - 0.3) ** 2).mean() + 2 * 0.5 * (1.0 + scores.mean()) - 0.25
    torch.testing.assert_close(one(scores, negatives), expected)
    torch.testing.assert_close(other(scores, negatives), expected)
