"""Word-level linear-chain CRF: negative log-likelihood and Viterbi decoding over masked sequences.

score(y) = start[y_1] + sum_i emissions[i, y_i] + sum_{i>1} transitions[y_{i-1}, y_i] + end[y_l]
and p(y | x) = exp(score(y)) / Z with Z the sum over all label sequences of length l (the
forward algorithm, in log space). Masks must be a prefix of each row (real words first) and every
sequence must have at least one word. Transitions are learned freely: no IOB2 constraints are
imposed, as in the papers' CRF baselines.

Contract for objectives: `HeadOutput.crf` is this module, `HeadOutput.scores` its emissions, and
`crf.nll(emissions, labels, mask)` returns one negative log-likelihood per sequence (reduce it as
the objective likes); labels may hold IGNORE (-100) where the mask is False.

Why not a CRF library: pytorch-crf (the usual choice, the same algorithm) is not among the project's
dependencies and has had no release since 0.7.2 in February 2019; torchcrf (2020) and torch-struct
(2021) are no better kept. This module is the forward algorithm and Viterbi in under 100 lines,
checked against brute-force enumeration in tests/unit/models/test_linear_chain_crf.py, so a new
unmaintained dependency would buy nothing.
"""

from __future__ import annotations

import torch
from torch import nn


class CRF(nn.Module):
    def __init__(self, num_labels: int):
        super().__init__()
        self.num_labels = num_labels
        self.start = nn.Parameter(torch.empty(num_labels).uniform_(-0.1, 0.1))
        self.end = nn.Parameter(torch.empty(num_labels).uniform_(-0.1, 0.1))
        self.transitions = nn.Parameter(torch.empty(num_labels, num_labels).uniform_(-0.1, 0.1))  # [from, to]

    def nll(self, emissions: torch.Tensor, labels: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """-log p(labels | emissions) per sequence: [batch].

        emissions [batch, words, K]; labels [batch, words] (any value where mask is False);
        mask [batch, words] bool.
        """
        _check_mask(mask)
        return self.log_partition(emissions, mask) - self.score(emissions, labels, mask)

    def score(self, emissions: torch.Tensor, labels: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Unnormalised log score of the given label sequences: [batch]."""
        labels = labels.masked_fill(~mask, 0)
        maskf = mask.to(emissions.dtype)
        emitted = emissions.gather(-1, labels.unsqueeze(-1)).squeeze(-1)  # [B, W]
        moved = self.transitions[labels[:, :-1], labels[:, 1:]]  # [B, W-1]
        last = labels.gather(1, (mask.sum(dim=1, keepdim=True) - 1).clamp(min=0)).squeeze(1)
        return (
            self.start[labels[:, 0]]
            + (emitted * maskf).sum(dim=1)
            + (moved * maskf[:, 1:]).sum(dim=1)
            + self.end[last]
        )

    def log_partition(self, emissions: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """log Z per sequence by the forward algorithm: [batch]."""
        alpha = self.start + emissions[:, 0]  # [B, K]: log-sum of scores of paths ending in each label
        for i in range(1, emissions.shape[1]):
            step = torch.logsumexp(alpha.unsqueeze(2) + self.transitions + emissions[:, i].unsqueeze(1), dim=1)
            alpha = torch.where(mask[:, i].unsqueeze(1), step, alpha)
        return torch.logsumexp(alpha + self.end, dim=1)

    @torch.no_grad()
    def viterbi(self, emissions: torch.Tensor, mask: torch.Tensor) -> list[list[int]]:
        """The highest-scoring label sequence of each row, cut to its length."""
        _check_mask(mask)
        best = self.start + emissions[:, 0]  # [B, K]
        backpointers = []
        for i in range(1, emissions.shape[1]):
            candidates = best.unsqueeze(2) + self.transitions  # [B, from, to]
            step_best, step_from = candidates.max(dim=1)
            best = torch.where(mask[:, i].unsqueeze(1), step_best + emissions[:, i], best)
            backpointers.append(step_from)
        last = (best + self.end).argmax(dim=1).tolist()
        lengths = mask.sum(dim=1).tolist()
        pointers = torch.stack(backpointers, dim=1).tolist() if backpointers else []
        paths = []
        for row, (label, length) in enumerate(zip(last, lengths)):
            path = [label]
            for i in range(length - 2, -1, -1):  # pointers[row][i] leads from word i+1 back to word i
                label = pointers[row][i][label]
                path.append(label)
            paths.append(path[::-1])
        return paths


def _check_mask(mask: torch.Tensor) -> None:
    if mask.shape[1] == 0 or not bool(mask[:, 0].all()):
        raise ValueError("every sequence given to the CRF needs at least one word")
