"""Fixtures for objective tests: a CoNLL-like context and a padded batch."""

from __future__ import annotations

import pytest
import torch
from objective_fakes import COUNTS, LABELS

from nerplat.models.heads.base import IGNORE
from nerplat.objectives import ObjectiveContext


@pytest.fixture
def context() -> ObjectiveContext:
    return ObjectiveContext(labels=list(LABELS), label_counts=list(COUNTS), max_length=16, seed=7)


@pytest.fixture
def batch() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """ids, mask, labels of 3 sentences (lengths 6, 4, 2) padded to 6 words; every label occurs."""
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(0, 50, (3, 6), generator=generator)
    labels = torch.tensor(
        [[0, 1, 2, 0, 3, 4], [3, 4, 0, 1, IGNORE, IGNORE], [0, 0, IGNORE, IGNORE, IGNORE, IGNORE]]
    )
    return ids, labels != IGNORE, labels

