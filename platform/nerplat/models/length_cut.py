"""Length-sorted rows cut into batches where padding plus a cost per batch is least.

On a CPU a transformer's compute grows with the padded sub-tokens it is handed, so a batch of mixed
lengths costs what a batch of its longest would. Evaluation batches are cut this way from a split
sorted by length (`trial.batching`), and the tagger encodes each training batch in pieces cut this
way (`models.tagger`), so batches drawn at random waste less on padding.
"""

from __future__ import annotations

import numpy as np

# What a batch (an encoder pass) costs beside its padded sub-tokens, in padded sub-tokens: the cut
# weighs one more pass against the padding it saves. Costs from 32 to 128 trained fastest and 128
# evaluated as fast as any (docs/performance.md, "Length groups of at most a quarter, and length
# pieces" and "The cheapest cut of evaluation batches").
BATCH_COST_TOKENS = 128


def cheapest_cut(
    order: np.ndarray, lengths: np.ndarray, batch_size: int, max_tokens: int, batch_cost: int = BATCH_COST_TOKENS
) -> list[np.ndarray]:
    """`order` (longest first) cut into batches of at most `batch_size` items and `max_tokens` padded
    sub-tokens, where the cuts cost least: padded sub-tokens plus `batch_cost` per batch.

    Filling each batch to the bound, longest first, pads its short items to its first; cutting
    where lengths drop pads less at the price of a few more batches. The cheapest cut of a sorted
    order into contiguous batches is a shortest path: cost[i] = min over k of batch_cost +
    k * lengths[i] + cost[i + k], solved from the shortest item back.
    """
    sorted_lengths = np.maximum(lengths[order].astype(np.int64), 1)
    count = len(order)
    cost = np.zeros(count + 1)
    size = np.ones(count, dtype=np.int64)
    for first in range(count - 1, -1, -1):
        longest = int(sorted_lengths[first])
        sizes = np.arange(1, max(1, min(batch_size, max_tokens // longest, count - first)) + 1)
        totals = batch_cost + sizes * longest + cost[first + sizes]
        best = len(totals) - 1 - int(np.argmin(totals[::-1]))  # of equal costs, the larger batch
        cost[first], size[first] = totals[best], sizes[best]
    batches, first = [], 0
    while first < count:
        batches.append(order[first : first + size[first]])
        first += int(size[first])
    return batches
