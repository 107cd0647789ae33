"""Length-sorted rows cut into batches where padding plus a cost per batch is least.

On a CPU a transformer's compute grows with the padded sub-tokens it is handed, so a batch of mixed
lengths costs what a batch of its longest would. Evaluation batches are cut this way from a split
sorted by length (`trial.batching`), and the tagger encodes each training batch in pieces cut this
way (`models.tagger`), so batches drawn at random waste less on padding.
"""

from __future__ import annotations

import numpy as np

# What a batch (an encoder pass) costs beside its padded sub-tokens, in padded sub-tokens: the cut
# weighs one more pass against the padding it saves. Training, MiniLM-L6 on 2 CPU threads, idle
# (`docs/train-piece-probe.py 3`, 2026-11-29): the bench sweep's 100-sentence, 28-step trial with
# batches drawn nearly at random trained in 9.88 s in whole batches; cut at cost 0, 17.60 s; 8,
# 11.17; 32, 8.93; 64, 8.40; 128, 7.81; 512, 9.24 (medians of 3 seeds; 6.28 s with the set sorted
# by length as one group): 32 to 128 within 1.1 s, 128 kept. Evaluation in bf16 (`docs/eval-batch-probe.py 100 9`
# and `... 1000 7`, 2026-11-28): costs 64 and 128 scored 100 CoNLL dev sentences in 0.96x and 0.97x
# the time of batches filled to 1,024 padded sub-tokens, 1,000 in 0.99x and 0.98x.
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
