"""MoM (Nemoto et al. 2024, eq. 1-3): exact CE at lambda = 1, the M normaliser, any base loss, config forms."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from objective_fakes import make, output_of

from nerplat.errors import UserInputError
from nerplat.models.heads.base import IGNORE
from nerplat.objectives import OBJECTIVES, ObjectiveConfig, ObjectiveContext
from nerplat.objectives.mom import MoMConfig, base_losses
from nerplat.objectives.token_loss import TokenLoss


@pytest.fixture
def scored(batch):
    _, _, labels = batch
    return torch.randn(3, 6, 5, generator=torch.Generator().manual_seed(2)), labels


def test_lambda_one_is_exactly_cross_entropy(context, scored):
    scores, labels = scored
    mom = make("mom", context, **{"lambda": 1.0})
    ce = make("ce", context)
    out = output_of(scores, labels)
    assert torch.equal(mom(out, labels), ce(out, labels))
    expected = F.cross_entropy(scores.reshape(-1, 5), labels.reshape(-1), ignore_index=IGNORE)
    torch.testing.assert_close(mom(out, labels), expected, rtol=0, atol=1e-7)


def test_majority_term_is_sum_over_gold_o_divided_by_padded_length_times_sentences(context, scored):
    scores, labels = scored
    word_ce = F.cross_entropy(scores.reshape(-1, 5), labels.reshape(-1), ignore_index=IGNORE, reduction="none")
    outside_sum = word_ce[labels.reshape(-1) == 0].sum()
    usual = word_ce[labels.reshape(-1) != IGNORE].mean()
    majority = outside_sum / (context.max_length * 3)
    out = output_of(scores, labels)
    torch.testing.assert_close(make("mom", context, **{"lambda": 0.0})(out, labels), majority)
    torch.testing.assert_close(make("mom", context, lambda_=0.3)(out, labels), 0.3 * usual + 0.7 * majority)


def test_normaliser_is_the_context_max_length_not_the_word_count(scored):
    scores, labels = scored
    out = output_of(scores, labels)
    short = ObjectiveContext(["O", "B-LOC", "I-LOC", "B-PER", "I-PER"], [5, 1, 1, 1, 1], max_length=16)
    long = ObjectiveContext(short.labels, short.label_counts, max_length=128)
    ratio = make("mom", short, **{"lambda": 0.0})(out, labels) / make("mom", long, **{"lambda": 0.0})(out, labels)
    assert ratio.item() == pytest.approx(8.0)


def test_any_base_loss_with_its_parameters(context, scored):
    scores, labels = scored
    out = output_of(scores, labels)
    mom_focal = make("mom", context, base={"name": "focal", "params": {"gamma": 0.0}}, **{"lambda": 1.0})
    torch.testing.assert_close(mom_focal(out, labels), make("ce", context)(out, labels))
    for base in ("wce", "focal", "dice"):
        mom = make("mom", context, base=base, **{"lambda": 0.5})
        assert mom(out, labels).item() > 0


def test_base_parameters_are_validated_by_the_base_loss():
    with pytest.raises(ValueError, match=r"params\.gamma"):
        MoMConfig.model_validate({"base": {"name": "focal", "params": {"gamma": 11}}})
    with pytest.raises(ValueError, match="mom"):
        MoMConfig.model_validate({"base": "mom"})


def test_lambda_alias_and_range():
    assert MoMConfig.model_validate({"lambda": 0.2}).lambda_ == 0.2
    assert MoMConfig.model_validate({"lambda_": 0.2}).lambda_ == 0.2
    assert MoMConfig().model_dump(by_alias=True)["lambda"] == 0.175
    with pytest.raises(ValueError):
        MoMConfig.model_validate({"lambda": 1.5})


def test_mom_needs_an_o_label():
    with pytest.raises(UserInputError, match="'O' label"):
        make("mom", ObjectiveContext(["B-X", "I-X"], [1, 1], max_length=8))


def test_the_base_losses_are_the_registry_s_per_word_losses_for_mom_s_head(context):
    per_word = [e for e in OBJECTIVES.entries() if isinstance(make(e.name, context, **e.examples[0]), TokenLoss)]
    assert base_losses() == [e.name for e in per_word if set(MoMConfig.heads) <= set(e.config.heads)]
    assert {"ce", "dice", "focal", "wce"} <= set(base_losses())  # the bases of Nemoto et al. 2024
    assert "ova_bce" not in base_losses()  # a per-word loss, but of the one-vs-all head
    listed = ", ".join(base_losses())
    with pytest.raises(ValueError, match=rf"unknown base loss 'ova_bce' \(per-word losses: {listed}\)"):
        MoMConfig.model_validate({"base": "ova_bce"})


class Squared(TokenLoss):
    """A per-word loss the package does not have: (1 - p_gold)^2."""

    def word_losses(self, scores: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return (1 - scores.softmax(-1).gather(1, labels[:, None]).squeeze(1)) ** 2


def build_squared(config: ObjectiveConfig, context: ObjectiveContext) -> Squared:
    return Squared(config)


def test_a_newly_registered_per_word_loss_is_a_base_without_editing_mom(monkeypatch, context, scored):
    monkeypatch.setattr(OBJECTIVES, "_entries", dict(OBJECTIVES._entries))  # registered for this test only
    OBJECTIVES.register("squared", ObjectiveConfig)(build_squared)
    assert "squared" in base_losses()
    scores, labels = scored
    mom = make("mom", context, base="squared", **{"lambda": 0.5})
    assert mom(output_of(scores, labels), labels).item() > 0
