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
