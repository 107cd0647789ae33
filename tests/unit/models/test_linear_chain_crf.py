import itertools

import pytest
import torch

from nerplat.models.linear_chain_crf import CRF


def brute_force(crf: CRF, emissions: torch.Tensor, length: int) -> tuple[torch.Tensor, list[int]]:
    """log Z and the best path of one sequence by enumerating every label sequence."""
    scores, paths = [], []
    for path in itertools.product(range(crf.num_labels), repeat=length):
        score = crf.start[path[0]] + crf.end[path[-1]] + sum(emissions[i, y] for i, y in enumerate(path))
        score = score + sum(crf.transitions[a, b] for a, b in zip(path, path[1:]))
        scores.append(score)
        paths.append(list(path))
    scores = torch.stack(scores)
    return torch.logsumexp(scores, dim=0), paths[int(scores.argmax())]


@pytest.fixture
def crf_and_batch():
    torch.manual_seed(0)
    crf = CRF(3)
    with torch.no_grad():  # larger than the initial values, so paths differ clearly
        for p in crf.parameters():
            p.normal_()
    emissions = torch.randn(4, 5, 3)
    lengths = torch.tensor([5, 1, 3, 4])
    mask = torch.arange(5) < lengths[:, None]
    return crf, emissions, mask, lengths


def test_partition_function_and_viterbi_equal_brute_force(crf_and_batch):
    crf, emissions, mask, lengths = crf_and_batch
    log_z = crf.log_partition(emissions, mask)
    paths = crf.viterbi(emissions, mask)
    for row, length in enumerate(lengths.tolist()):
        expected_log_z, expected_path = brute_force(crf, emissions[row], length)
        assert log_z[row].item() == pytest.approx(expected_log_z.item(), abs=1e-5)
        assert paths[row] == expected_path


def test_nll_is_minus_log_probability_of_the_gold_path(crf_and_batch):
    crf, emissions, mask, lengths = crf_and_batch
    labels = torch.randint(0, 3, (4, 5)).masked_fill(~mask, -100)
    nll = crf.nll(emissions, labels, mask)
    for row, length in enumerate(lengths.tolist()):
        log_z, _ = brute_force(crf, emissions[row], length)
        gold = labels[row, :length].tolist()
        score = crf.start[gold[0]] + crf.end[gold[-1]] + sum(emissions[row, i, y] for i, y in enumerate(gold))
        score = score + sum(crf.transitions[a, b] for a, b in zip(gold, gold[1:]))
        assert nll[row].item() == pytest.approx((log_z - score).item(), abs=1e-5)
    assert (nll > 0).all()


def test_nll_trains_every_crf_parameter_and_the_emissions(crf_and_batch):
    crf, emissions, mask, _ = crf_and_batch
    emissions.requires_grad_(True)
    labels = torch.zeros(4, 5, dtype=torch.long)
    crf.nll(emissions, labels, mask).sum().backward()
    for name, p in crf.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, name
    assert emissions.grad[~mask].abs().sum() == 0  # padding has no influence
    assert emissions.grad[mask].abs().sum() > 0


def test_empty_sequences_are_refused():
    crf = CRF(2)
    with pytest.raises(ValueError, match="at least one word"):
        crf.viterbi(torch.zeros(1, 2, 2), torch.tensor([[False, False]]))
