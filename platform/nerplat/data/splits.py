"""Seeded carving of one split out of another (a dev split from train, a test split from gmb)."""

from __future__ import annotations

from collections.abc import Sequence

from nerplat.data.corpus import Sentence
from nerplat.data.seeding import seeded_rng


def carve(
    sentences: Sequence[Sentence], fraction: float, *key: object
) -> tuple[tuple[Sentence, ...], tuple[Sentence, ...]]:
    """Splits off ``round(fraction * n)`` sentences (at least one, never all) drawn with ``seeded_rng(*key)``.

    Both parts keep the original sentence order. Returns ``(kept, carved)``.
    """
    if not 0 < fraction < 1:
        raise ValueError(f"fraction must be in (0, 1), got {fraction}")
    if len(sentences) < 2:
        raise ValueError("cannot split fewer than two sentences")
    size = min(max(1, round(fraction * len(sentences))), len(sentences) - 1)
    chosen = set(seeded_rng(*key).sample(range(len(sentences)), size))
    kept = tuple(s for i, s in enumerate(sentences) if i not in chosen)
    carved = tuple(s for i, s in enumerate(sentences) if i in chosen)
    return kept, carved
