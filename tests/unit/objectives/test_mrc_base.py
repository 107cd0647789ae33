"""MRC objectives: targets from span ends, each loss's formula, MoM's carry-over, and gradients."""

import pytest
import torch
import torch.nn.functional as F
from objective_fakes import make, registered_examples
from torch import nn

from nerplat.errors import UserInputError
from nerplat.models.heads.base import IGNORE
from nerplat.models.heads.mrc import MRCHead, MRCOutput
from nerplat.objectives import ObjectiveContext
from nerplat.objectives.mrc_base import mrc_tasks
from nerplat.objectives.mrc_mom import MRCMoMConfig

LABELS = ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]


@pytest.fixture
def context() -> ObjectiveContext:
    return ObjectiveContext(labels=LABELS, label_counts=[50, 5, 3, 4, 2], max_length=12)


@pytest.fixture
def labels() -> torch.Tensor:
    """Two windows x two types; window 1 has 3 words. LOC 2-3 and PER 0-0 in window 0, PER 1-2 in window 1."""
    return torch.tensor(
        [
            [-1, -1, 3, -1, -1],
            [0, -1, -1, -1, -1],
            [-1, -1, -1, IGNORE, IGNORE],
            [-1, 2, -1, IGNORE, IGNORE],
        ]
    )


class TinyMRC(nn.Module):
    """Embedding 'encoder' + the real mrc head."""

    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Embedding(30, 8), nn.LayerNorm(8))
        self.head = MRCHead(8, LABELS, dropout=0.0)

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> MRCOutput:
        return self.head(self.encoder(ids), mask)


def random_output(labels: torch.Tensor) -> MRCOutput:
    g = torch.Generator().manual_seed(3)
    rows, words = labels.shape
    return MRCOutput(
        start=torch.randn(rows, words, generator=g),
        end=torch.randn(rows, words, generator=g),
        match=torch.randn(rows, words, words, generator=g),
        mask=labels != IGNORE,
    )


def test_targets_follow_from_span_ends(labels):
    tasks = mrc_tasks(random_output(labels), labels)
    assert tasks["start"][1].tolist() == [0, 0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0]
    assert tasks["end"][1].tolist() == [0, 0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]
    assert len(tasks["match"][1]) == 2 * 15 + 2 * 6  # pairs i <= j of real words
    assert tasks["match"][1].sum() == 3


def test_bce_is_the_weighted_mean_of_the_three_task_means(context, labels):
    out = random_output(labels)
    tasks = mrc_tasks(out, labels)
    bce = {t: F.binary_cross_entropy_with_logits(*tasks[t]) for t in tasks}
    expected = (1 * bce["start"] + 1 * bce["end"] + 2 * bce["match"]) / 4
    torch.testing.assert_close(make("mrc_bce", context, match_weight=2.0)(out, labels), expected)


def test_focal_with_gamma_zero_is_bce(context, labels):
    out = random_output(labels)
    torch.testing.assert_close(make("mrc_focal", context, gamma=0.0)(out, labels), make("mrc_bce", context)(out, labels))


@pytest.mark.parametrize(
    "params, eps, delta, square",
    [
        ({}, 1.0, 0.01, False),  # the defaults: ShannonAI's DiceLoss._binary_class
        # smooth 1, alpha 0.01, --dice_square: dice_loss_for_NLP scripts/ner_enconll03/bert_dice.sh
        ({"eps": 0.01, "delta": 1.0, "square": True}, 0.01, 1.0, True),
    ],
)
def test_dice_is_set_level_per_task(context, labels, params, eps, delta, square):
    out = random_output(labels)
    tasks = mrc_tasks(out, labels)

    def dice(logits, y):
        p = torch.sigmoid(logits)
        q = (1 - p) ** eps * p
        denominator = ((q * q).sum() + (y * y).sum()) if square else (q.sum() + y.sum())
        return 1 - (2 * (q * y).sum() + delta) / (denominator + delta)

    expected = sum(dice(*tasks[t]) for t in tasks) / 3
    torch.testing.assert_close(make("mrc_dice", context, **params)(out, labels), expected)


@pytest.mark.parametrize("base", ["mrc_bce", {"name": "mrc_focal", "params": {"gamma": 3.0}}])
def test_mom_with_lambda_one_is_exactly_the_base_loss(context, labels, base):
    out = random_output(labels)
    name, params = (base, {}) if isinstance(base, str) else (base["name"], base["params"])
    assert torch.equal(
        make("mrc_mom", context, base=base, **{"lambda": 1.0})(out, labels), make(name, context, **params)(out, labels)
    )


def test_mom_majority_term_sums_negatives_over_padded_positions_per_example(context, labels):
    out = random_output(labels)
    tasks = mrc_tasks(out, labels)
    positions = {"start": 12, "end": 12, "match": 12 * 13 // 2}
    majority = 0.0
    for task, (logits, y) in tasks.items():
        losses = F.binary_cross_entropy_with_logits(logits, y, reduction="none")
        majority = majority + losses[y == 0].sum() / (positions[task] * 4) / 3
    torch.testing.assert_close(make("mrc_mom", context, **{"lambda": 0.0})(out, labels), majority)
    usual = make("mrc_bce", context)(out, labels)
    torch.testing.assert_close(make("mrc_mom", context, **{"lambda": 0.3})(out, labels), 0.3 * usual + 0.7 * majority)


@pytest.mark.parametrize("name,params", registered_examples(mrc=True))
def test_gradients_reach_every_parameter(context, labels, name, params):
    torch.manual_seed(0)
    model = TinyMRC()
    objective = make(name, context, **params)
    ids = torch.randint(0, 30, labels.shape, generator=torch.Generator().manual_seed(1))
    loss = objective(model(ids, labels != IGNORE), labels)
    assert torch.isfinite(loss)
    loss.backward()
    missing = [n for n, p in model.named_parameters() if p.grad is None or p.grad.abs().sum() == 0]
    assert not missing, f"{name} {params}: no gradient for {missing}"


def test_a_batch_without_words_gives_a_connected_zero(context):
    labels = torch.full((2, 3), IGNORE)
    out = random_output(labels)
    out.start.requires_grad_(True)
    loss = make("mrc_bce", context)(out, labels)
    assert loss.item() == 0.0 and loss.requires_grad


def test_configs_refuse_dice_under_mom_and_all_zero_weights(context):
    with pytest.raises(ValueError, match="mrc_bce"):
        MRCMoMConfig.model_validate({"base": "mrc_dice"})
    with pytest.raises(UserInputError, match="cannot all be 0"):
        make("mrc_bce", context, start_weight=0.0, end_weight=0.0, match_weight=0.0)
    assert MRCMoMConfig().lambda_ == 0.446


def test_mrc_losses_refuse_word_level_heads(context, labels):
    from nerplat.models.heads.base import HeadOutput

    with pytest.raises(ValueError, match="'mrc' head"):
        make("mrc_bce", context)(HeadOutput(torch.zeros(4, 5, 5), labels != IGNORE), labels)
