"""Objectives defined by a loss per labelled word, averaged over the labelled words of a batch.

CE, WCE, focal and dice are of this kind, and MoM (Nemoto et al. 2024) needs exactly that per-word loss: it adds
the same loss summed over the gold-O words. Subclasses implement `word_losses`.
"""

from __future__ import annotations

import typing

import torch

from nerplat.models.heads.base import HeadOutput
from nerplat.objectives.base import Objective, labelled_words, zero_loss
from nerplat.objectives.registry import OBJECTIVES


class TokenLoss(Objective):
    """Mean over labelled words of `word_losses` (Nemoto et al. 2024's L, the "usual" loss)."""

    def word_losses(self, scores: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """Per-word losses ``[N]`` from scores ``[N, K]`` and gold label ids ``[N]``."""
        raise NotImplementedError

    def forward(self, output: HeadOutput, labels: torch.Tensor, substep: int = 0) -> torch.Tensor:
        self.check_substep(substep)
        scores, gold = labelled_words(output, labels)
        if gold.numel() == 0:
            return zero_loss(output)
        return self.word_losses(scores, gold).mean()


def per_word_losses() -> list[str]:
    """Registered objectives whose factory is declared to build a `TokenLoss`: the bases MoM accepts.

    Read from the registry at validation time, so a new per-word loss is a MoM base without a list to edit.
    """
    names = []
    for entry in OBJECTIVES.entries():
        built = typing.get_type_hints(entry.factory).get("return")
        if isinstance(built, type) and issubclass(built, TokenLoss):
            names.append(entry.name)
    return names


def floored_power(base: torch.Tensor, exponent: float) -> torch.Tensor:
    """base^exponent with base floored at 1e-12: exponents below 1 keep a finite gradient where fp32
    probabilities saturate at exactly 0 or 1 (focal's (1 - p)^gamma, dice's (1 - p)^eps)."""
    return base.clamp(min=1e-12) ** exponent
