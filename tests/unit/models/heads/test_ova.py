"""The one-vs-all head leaves labels without training words out of its argmax (Nguyen et al. 2023b, eq. 2)."""

import torch

from nerplat.models.heads import HEADS
from nerplat.models.heads.base import HeadConfig, HeadOutput

LABELS = ["O", "B-ENT", "I-ENT"]


def ova_head():
    return HEADS.get("ova").factory(HeadConfig(), labels=LABELS, hidden_size=4)


def output(scores: list[list[float]]) -> HeadOutput:
    return HeadOutput(scores=torch.tensor([scores]), mask=torch.ones(1, len(scores), dtype=torch.bool))


def test_a_label_without_training_words_is_never_decoded_though_its_score_is_the_highest():
    head = ova_head()
    head.leave_out_untrained([40, 0, 3])
    scored = output([[0.1, 9.0, -1.0], [0.0, 9.0, 2.0], [1.0, 0.0, 0.5]])
    assert head.decode(scored) == [[0, 2, 0]]
    assert scored.scores[0, :, 1].tolist() == [9.0, 9.0, 0.0]  # the score is still there to report


def test_every_label_is_decoded_until_label_counts_are_given():
    assert ova_head().decode(output([[0.1, 9.0, -1.0]])) == [[1]]


def test_the_left_out_labels_travel_with_the_state_dict():
    head = ova_head()
    head.leave_out_untrained([40, 0, 3])
    loaded = ova_head()
    loaded.load_state_dict(head.state_dict())
    assert loaded.decode(output([[0.1, 9.0, -1.0]])) == [[0]]


def test_a_state_dict_saved_before_the_mask_existed_loads_with_every_label_decoded():
    old = {name: value for name, value in ova_head().state_dict().items() if name.startswith("classifier.")}
    head = ova_head()
    head.leave_out_untrained([40, 0, 3])
    head.load_state_dict(old)
    assert head.decode(output([[0.1, 9.0, -1.0]])) == [[1]]
