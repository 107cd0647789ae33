"""The contract every head keeps: config, factory, forward -> HeadOutput, decode -> label ids."""

import pydantic
import pytest
import torch

from nerplat.models.linear_chain_crf import CRF
from nerplat.models.heads import HEADS
from nerplat.models.heads.base import HeadConfig, HeadOutput, HeadServing
from nerplat.models.heads.registry import head_serving

LABELS = ["O", "B-ENT", "I-ENT"]
HIDDEN = 8


def build(name: str, **params):
    entry = HEADS.get(name)
    return entry.factory(entry.config(**params), labels=LABELS, hidden_size=HIDDEN)


def test_every_head_of_the_papers_is_registered():
    assert set(HEADS.names()) == {"softmax", "crf", "bilstm_softmax", "bilstm_crf", "crfsuite", "two_task", "ova", "mrc"}


TORCH_HEADS = [entry.name for entry in HEADS.entries() if issubclass(entry.config, HeadConfig)]  # crfsuite: test_crfsuite.py


@pytest.mark.parametrize("name", TORCH_HEADS)
def test_config_forbids_unknown_keys_and_describes_every_field(name):
    config = HEADS.get(name).config
    with pytest.raises(pydantic.ValidationError):
        config(no_such_field=1)
    assert "dropout" in config.model_fields
    for field_name, field in config.model_fields.items():
        assert field.description, field_name
    assert HEADS.get(name).summary


@pytest.mark.parametrize(
    "name,width", [("softmax", 3), ("crf", 3), ("bilstm_softmax", 3), ("bilstm_crf", 3), ("two_task", 2), ("ova", 3)]
)
def test_forward_scores_and_decoded_lengths(name, width):
    torch.manual_seed(0)
    head = build(name)
    mask = torch.tensor([[True, True, True, True], [True, True, False, False]])
    output = head(torch.randn(2, 4, HIDDEN), mask)
    assert isinstance(output, HeadOutput)
    assert output.scores.shape == (2, 4, width) and output.mask is mask
    decoded = head.decode(output)
    assert [len(d) for d in decoded] == [4, 2]
    assert all(0 <= i < len(LABELS) for d in decoded for i in d)
    assert isinstance(output.crf, CRF) == name.endswith("crf")


@pytest.mark.parametrize("name", ["softmax", "bilstm_softmax", "ova"])
def test_argmax_heads_decode_the_highest_score(name):
    head = build(name)
    scores = torch.tensor([[[0.1, 2.0, -1.0], [3.0, 0.0, 0.0], [0.0, 0.0, 0.5]]])
    output = HeadOutput(scores=scores, mask=torch.tensor([[True, True, False]]))
    assert head.decode(output) == [[1, 0]]


@pytest.mark.parametrize("name", ["crf", "bilstm_crf"])
def test_crf_heads_decode_by_viterbi_over_their_transitions(name):
    head = build(name)
    with torch.no_grad():
        head.crf.start.zero_()
        head.crf.end.zero_()
        head.crf.transitions.fill_(0.0)
        head.crf.transitions[0, 2] = -100.0  # O -> I-ENT forbidden
    # word 2 prefers I-ENT slightly, but after an O the transition makes B-ENT the better path
    scores = torch.tensor([[[5.0, 0.0, 0.0], [0.0, 1.0, 1.5]]])
    output = HeadOutput(scores=scores, mask=torch.ones(1, 2, dtype=torch.bool), crf=head.crf)
    assert head.decode(output) == [[0, 1]]
    assert torch.softmax(scores, -1).argmax(-1).tolist() == [[0, 2]]


@pytest.mark.parametrize("name", ["bilstm_softmax", "bilstm_crf"])
def test_bilstm_ignores_what_lies_in_padding(name):
    torch.manual_seed(0)
    head = build(name, hidden_size=5).eval()
    states = torch.randn(1, 4, HIDDEN)
    noisy = states.clone()
    noisy[0, 2:] = 100.0
    mask = torch.tensor([[True, True, False, False]])
    clean_scores, noisy_scores = head(states, mask).scores, head(noisy, mask).scores
    assert torch.allclose(clean_scores[0, :2], noisy_scores[0, :2])


def test_every_head_s_serving_traits_are_a_head_serving_or_unsaid():
    assert all(entry.traits is None or isinstance(entry.traits, HeadServing) for entry in HEADS.entries())
    assert head_serving("crf") == HeadServing(decoding="CRF Viterbi")
    assert head_serving("mrc") == head_serving("no_such_head") == HeadServing()


def test_probability_heads_give_the_probability_of_the_decoded_label():
    scores = torch.tensor([[[2.0, 0.0, -1.0], [0.5, 1.0, -0.5]]])
    ids = torch.tensor([[0, 2]])
    softmax = torch.softmax(scores, dim=-1)
    sigmoid = torch.sigmoid(scores)
    torch.testing.assert_close(head_serving("softmax").confidence(scores, ids, 0), softmax[0, [0, 1], [0, 2]][None])
    torch.testing.assert_close(head_serving("ova").confidence(scores, ids, 0), sigmoid[0, [0, 1], [0, 2]][None])
    entity = sigmoid[..., 0]
    torch.testing.assert_close(
        head_serving("two_task").confidence(scores, ids, 0), torch.stack([1 - entity[0, 0], entity[0, 1]])[None]
    )
    assert head_serving("crf").confidence is None and head_serving("bilstm_crf").confidence is None
