import pytest
import torch

from nerplat.errors import UserInputError
from nerplat.models.heads import HEADS
from nerplat.models.heads.base import HeadOutput

LABELS = ["O", "B-ENT", "I-ENT"]


def build(labels=LABELS, **params):
    entry = HEADS.get("two_task")
    return entry.factory(entry.config(**params), labels=labels, hidden_size=4)


def output(pairs: list[tuple[float, float]]) -> HeadOutput:
    scores = torch.tensor([pairs], dtype=torch.float)  # logits (en, be)
    return HeadOutput(scores=scores, mask=torch.ones(1, len(pairs), dtype=torch.bool))


def test_algorithm_1_on_a_hand_made_sentence():
    # "John Smith visited the Red Cross": B I O O B I; the 4th word has en=-1, be=+1 -> O
    head = build()
    decoded = head.decode(output([(3, 2), (2, -3), (-4, -2), (-1, 1), (1, 1), (5, -1)]))
    assert [LABELS[i] for i in decoded[0]] == ["B-ENT", "I-ENT", "O", "O", "B-ENT", "I-ENT"]


def test_decoding_maps_to_the_label_list_order_and_type():
    head = build(labels=["I-PER", "O", "B-PER"])
    assert head.decode(output([(1, 1), (1, -1), (-1, 1), (-1, -1)])) == [[2, 0, 1, 1]]


def test_thresholds_are_a_saved_buffer_that_a_trial_can_set():
    head = build(threshold=0.5)
    scores = output([(0.5, 0.5), (0.5, -0.5)])  # sigmoid(0.5) = 0.62
    assert head.decode(scores) == [[1, 2]]
    head.set_thresholds(0.7, 0.5)
    assert head.decode(scores) == [[0, 0]]
    head.set_thresholds(0.6, 0.9)
    assert head.decode(scores) == [[2, 2]]
    assert torch.equal(head.state_dict()["threshold"], torch.tensor([0.6, 0.9]))
    assert build(threshold=0.8).threshold.tolist() == pytest.approx([0.8, 0.8])


@pytest.mark.parametrize("labels", [["O", "B-PER", "I-PER", "B-LOC", "I-LOC"], ["O", "B-PER", "B-LOC"], ["O"]])
def test_typed_label_sets_are_refused_with_a_hint(labels):
    with pytest.raises(UserInputError, match="untyped"):
        build(labels=labels)
