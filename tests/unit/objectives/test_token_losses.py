"""CE, WCE, focal and dice against closed forms and against each other at their degenerate settings."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from objective_fakes import COUNTS, make, output_of

from nerplat.errors import UserInputError
from nerplat.models.heads.base import IGNORE
from nerplat.objectives.dice import DiceConfig
from nerplat.objectives.wce import class_weights


@pytest.fixture
def scored(batch):
    _, _, labels = batch
    scores = torch.randn(3, 6, 5, generator=torch.Generator().manual_seed(1))
    return scores, labels


def reference_ce(scores, labels):
    return F.cross_entropy(scores.reshape(-1, scores.shape[-1]), labels.reshape(-1), ignore_index=IGNORE)


def test_ce_is_torch_cross_entropy_over_labelled_words(context, scored):
    scores, labels = scored
    torch.testing.assert_close(make("ce", context)(output_of(scores, labels), labels), reference_ce(scores, labels))


def test_ce_ignores_scores_of_padding(context, scored):
    scores, labels = scored
    poisoned = scores.masked_fill((labels == IGNORE)[..., None], 1e4)
    ce = make("ce", context)
    assert ce(output_of(poisoned, labels), labels) == ce(output_of(scores, labels), labels)


def test_focal_with_gamma_zero_is_cross_entropy(context, scored):
    scores, labels = scored
    focal = make("focal", context, gamma=0.0)
    torch.testing.assert_close(focal(output_of(scores, labels), labels), reference_ce(scores, labels))


def test_focal_softmax_matches_closed_form_on_one_word(context):
    scores = torch.tensor([[[2.0, 0.0, 0.0, 0.0, 0.0]]])
    labels = torch.tensor([[0]])
    p = math.exp(2) / (math.exp(2) + 4)
    expected = -((1 - p) ** 2) * math.log(p)
    loss = make("focal", context, gamma=2.0)(output_of(scores, labels), labels)
    assert loss.item() == pytest.approx(expected, rel=1e-5)


def test_focal_one_vs_rest_with_gamma_zero_is_summed_binary_cross_entropy(context, scored):
    scores, labels = scored
    keep = labels != IGNORE
    target = F.one_hot(labels[keep], 5).float()
    expected = F.binary_cross_entropy_with_logits(scores[keep], target, reduction="none").sum(-1).mean()
    focal = make("focal", context, gamma=0.0, form="one_vs_rest")
    torch.testing.assert_close(focal(output_of(scores, labels), labels), expected)


def test_focal_down_weights_easy_words(context):
    labels = torch.tensor([[0]])
    easy, hard = torch.tensor([[[5.0, 0, 0, 0, 0]]]), torch.tensor([[[0.0, 0, 0, 0, 0]]])
    focal, ce = make("focal", context, gamma=2.0), make("ce", context)
    ratio_easy = focal(output_of(easy, labels), labels) / ce(output_of(easy, labels), labels)
    ratio_hard = focal(output_of(hard, labels), labels) / ce(output_of(hard, labels), labels)
    assert ratio_easy < 0.01 < 0.5 < ratio_hard


def test_focal_gradient_is_finite_when_softmax_saturates(context):
    scores = torch.tensor([[[200.0, 0, 0, 0, 0]]], requires_grad=True)
    labels = torch.tensor([[0]])
    make("focal", context, gamma=0.5)(output_of(scores, labels), labels).backward()
    assert torch.isfinite(scores.grad).all()


def test_wce_inverse_frequency_weights_average_one_over_training_words():
    weights = class_weights(COUNTS, "inverse_frequency", beta=None)
    counts = torch.tensor(COUNTS, dtype=torch.float32)
    assert (weights * counts).sum() / counts.sum() == pytest.approx(1.0)
    assert weights[2] == pytest.approx(1000 / (5 * 20))


def test_wce_log_ratio_weights_follow_the_formula():
    weights = class_weights(COUNTS, "log_ratio", beta=2.0)
    assert weights[0].item() == pytest.approx(math.log10(200 / 800 + 2.0))
    assert weights[2].item() == pytest.approx(math.log10(980 / 20 + 2.0))


def test_wce_absent_label_gets_a_finite_weight():
    assert torch.isfinite(class_weights([10, 0, 5], "inverse_frequency", None)).all()


def test_wce_is_mean_of_weighted_word_losses(context, scored):
    scores, labels = scored
    keep = labels != IGNORE
    weights = class_weights(COUNTS, "log_ratio", 3.0)
    expected = (weights[labels[keep]] * F.cross_entropy(scores[keep], labels[keep], reduction="none")).mean()
    wce = make("wce", context, scheme="log_ratio", beta=3.0)
    torch.testing.assert_close(wce(output_of(scores, labels), labels), expected)


def test_wce_beta_goes_with_log_ratio_only(context):
    with pytest.raises(UserInputError, match="beta applies to scheme 'log_ratio'"):
        make("wce", context, beta=2.0)
    with pytest.raises(UserInputError, match="needs beta"):
        make("wce", context, scheme="log_ratio")


def test_dice_matches_per_word_formula(context):
    scores = torch.tensor([[[1.0, 0.0, -1.0, 0.5, 0.0]]])
    labels = torch.tensor([[3]])
    p = torch.softmax(scores[0, 0], -1)
    expected = 0.0
    for k in range(5):
        y = 1.0 if k == 3 else 0.0
        adjusted = (1 - p[k]) * p[k]
        expected += 1 - (2 * adjusted * y + 0.01) / (adjusted + y + 0.01)
    dice = make("dice", context, eps=1.0, delta=0.01)
    assert dice(output_of(scores, labels), labels).item() == pytest.approx(expected.item(), rel=1e-6)


def test_dice_is_lower_for_confident_correct_words(context):
    labels = torch.tensor([[1]])
    dice = make("dice", context, eps=0.0)
    right = dice(output_of(torch.tensor([[[0.0, 6, 0, 0, 0]]]), labels), labels)
    wrong = dice(output_of(torch.tensor([[[6.0, 0, 0, 0, 0]]]), labels), labels)
    assert right < wrong


def test_dice_squared_matches_002_equation_21(context):
    # Wang & Wang 2022, App. B eq. 21: k - (g + 2 p_c)/(g + p_c^2 + 1) - sum_{j != c} g/(g + p_j^2), g = 1e-5
    scores = torch.tensor([[[1.0, 0.0, -1.0, 0.5, 0.0]]])
    labels = torch.tensor([[3]])
    p, g, c = torch.softmax(scores[0, 0], -1).double(), 1e-5, 3
    expected = 5 - (g + 2 * p[c]) / (g + p[c] ** 2 + 1) - sum(g / (g + p[j] ** 2) for j in range(5) if j != c)
    dice = make("dice", context, form="squared", delta=1e-5)
    assert dice(output_of(scores, labels), labels).item() == pytest.approx(expected.item(), rel=1e-5)


def test_dice_squared_is_not_the_self_adjusting_form(context, scored):
    scores, labels = scored
    squared = make("dice", context, form="squared", delta=0.01)(output_of(scores, labels), labels)
    adjusting = make("dice", context, delta=0.01)(output_of(scores, labels), labels)
    assert abs(squared.item() - adjusting.item()) > 1e-3


def test_dice_eps_defaults_by_form_and_a_filled_in_config_builds_the_same_loss(context):
    assert make("dice", context).config.exponent == 1.0
    assert make("dice", context, form="squared").config.exponent == 0.0
    assert make("dice", context, form="squared", eps=0.01).config.exponent == 0.01
    filled = DiceConfig(form="squared", delta=1e-5).model_dump(mode="json")  # what a plan carries
    assert make("dice", context, **filled).config == DiceConfig(form="squared", delta=1e-5)


def test_dice_squared_with_eps_is_shannonai_multi_class_dice(context, scored):
    # dice_loss_for_NLP's DiceLoss on [N, K] scores with square_denominator: each label's column is
    # viewed as [N, 1] and reduced over its last axis, so numerator and denominator are per word:
    # sum_k 1 - (2 a_k y_k + smooth)/(a_k^2 + y_k^2 + smooth), a_k = (1 - p_k)^alpha p_k, mean over words.
    scores, labels = scored
    alpha, smooth = 0.01, 1.0
    words = labels.reshape(-1) != IGNORE
    p = torch.softmax(scores.reshape(-1, scores.shape[-1])[words].double(), -1)
    y = F.one_hot(labels.reshape(-1)[words], p.shape[-1]).double()
    a = (1 - p) ** alpha * p
    expected = sum(1 - (2 * a[:, k] * y[:, k] + smooth) / (a[:, k] ** 2 + y[:, k] ** 2 + smooth) for k in range(p.shape[-1]))
    dice = make("dice", context, form="squared", eps=alpha, delta=smooth)
    assert dice(output_of(scores, labels), labels).item() == pytest.approx(expected.mean().item(), rel=1e-5)
    plain = make("dice", context, form="squared", delta=smooth)(output_of(scores, labels), labels)
    assert abs(plain.item() - expected.mean().item()) > 1e-5  # eps is not ignored


def test_batch_without_labelled_words_gives_zero_loss_that_backpropagates(context):
    scores = torch.randn(1, 3, 5, requires_grad=True)
    labels = torch.full((1, 3), IGNORE)
    for name in ("ce", "wce", "focal", "dice"):
        loss = make(name, context)(output_of(scores, labels), labels)
        loss.backward()
        assert loss.item() == 0.0


SELF_ADJUSTING_004 = {"eps": 1.0, "delta": 0.01}
SQUARED_002 = {"form": "squared", "delta": 1e-5}


@pytest.mark.parametrize(
    ("dice", "p_outside"),
    [(SELF_ADJUSTING_004, p) for p in (0.6, 0.9, 0.99)] + [(SQUARED_002, p) for p in (0.8, 0.9, 0.99)],
)
def test_dice_pushes_an_o_predicted_entity_word_further_to_o(dice, p_outside):
    # docs/results/README.md (mom_conll, resampling): the dice collapses are the loss's own attractor.
    # One gradient step (size 1, on the scores) on a gold-entity word that the model gives to O, with
    # CoNLL's 9 labels, raises p(O) and lowers p(gold): with Nemoto et al. 2024's self-adjusting form (eps 1, delta
    # 0.01) from p(O) = 0.6, and with Wang & Wang 2022's squared form at their deep models' g = 1e-5 from p(O) = 0.8
    # (its wrong-label terms 1 - g/(g + p_j^2) fall as the entity labels' probabilities fall, and O
    # takes the mass; at p(O) = 0.6 the step still raises p(gold)).
    from nerplat.objectives import ObjectiveContext

    tags = ["O"] + [f"{b}-{t}" for t in ("PER", "LOC", "ORG", "MISC") for b in "BI"]
    context = ObjectiveContext(labels=tags, label_counts=[1] * len(tags), max_length=16, seed=0)
    loss = make("dice", context, **dice)
    rest = (1.0 - p_outside) / (len(tags) - 1)
    scores = torch.log(torch.tensor([[p_outside] + [rest] * (len(tags) - 1)])).requires_grad_(True)
    gold = torch.tensor([1])  # B-PER
    loss.word_losses(scores, gold).sum().backward()
    stepped = F.softmax(scores.detach() - scores.grad, dim=-1)[0]
    assert stepped[0] > p_outside and stepped[1] < rest
