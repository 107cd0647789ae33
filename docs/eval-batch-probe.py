"""How evaluation batches' cut changes the time of MiniLM-L6's forward passes on this CPU (docs/performance.md).

Scores the first N shuffled CoNLL-2003 dev sentences (max_length 64, bf16 autocast, 2 threads, under
`torch.inference_mode`) cut into length-sorted batches of at most 128 windows (the evaluation batch
of the bench sweep): one batch per 128 windows; filled to a bound of 512 to 4,096 padded sub-tokens
each, longest first (the cut before `models.length_cut.cheapest_cut`); the cheapest cut at 1,024 padded
sub-tokens with batch costs of 0 to 256 padded sub-tokens (`BATCH_COST_TOKENS` is one of them); and
at most 16 windows (a training batch of the sweep, what `bench peer`'s Trainer evaluates in). The
cuts run in turns, R times; it prints each cut's batches, padded sub-tokens and median time as a
ratio to the 128-window batches. Forward passes only: no head, no decoding, no metrics. Run from
the repository root: `.venv/bin/python docs/eval-batch-probe.py [N] [R] [--encoder tiny]` (defaults
100 sentences, 7 turns and minilm-l6; the tiny encoder is for tests/integration/docs).
"""

import argparse
import os
import random
import statistics
import time
from pathlib import Path

import numpy as np
import torch

from nerplat.config.trial import EncoderSettings
from nerplat.models.encoders import load_encoder
from nerplat.models.length_cut import cheapest_cut
from nerplat.trial.batching import length_grouped_batches

FILLED = (4096, 2048, 1024, 512)
COSTS = (0, 32, 64, 128, 256)


def dev_sentences(count: int) -> list[list[str]]:
    sentences, words = [], []
    for line in (Path(os.environ.get("NERPLAT_DATA", "../shared/data")) / "conll2003" / "dev.txt").read_text().splitlines():
        if not line.strip() or line.startswith("-DOCSTART-"):
            if words:
                sentences.append(words)
            words = []
        else:
            words.append(line.split()[0])
    random.Random(0).shuffle(sentences)
    return sentences[:count]


def filled(lengths: np.ndarray, bound: int) -> list[np.ndarray]:
    """Longest first, each batch filled to `bound` padded sub-tokens (at most 128 windows)."""
    order, batches, first = np.argsort(-lengths, kind="stable"), [], 0
    while first < len(order):
        fit = max(1, min(128, bound // int(lengths[order[first]])))
        batches.append(order[first : first + fit])
        first += fit
    return batches


def forward(model, encoded: list[list[int]], lengths: np.ndarray, batches: list[np.ndarray]) -> None:
    with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16):
        for batch in batches:
            ids = torch.zeros(len(batch), int(lengths[batch[0]]), dtype=torch.long)
            mask = torch.zeros_like(ids)
            for row, item in enumerate(batch):
                ids[row, : lengths[item]] = torch.tensor(encoded[item])
                mask[row, : lengths[item]] = 1
            model(input_ids=ids, attention_mask=mask)


def main(count: int, repeats: int, encoder: str) -> None:
    torch.set_num_threads(2)
    loaded = load_encoder(EncoderSettings(name=encoder))
    tokenizer, model = loaded.tokenizer, loaded.model.eval()
    encoded = [
        tokenizer(words, is_split_into_words=True, truncation=True, max_length=64)["input_ids"] for words in dev_sentences(count)
    ]
    lengths = np.array([len(ids) for ids in encoded])
    order = np.argsort(-lengths, kind="stable")
    cuts = {"128 windows": length_grouped_batches(lengths, 128, seed=None)}
    cuts |= {f"filled {bound}": filled(lengths, bound) for bound in FILLED}
    cuts |= {f"cheapest, cost {cost}": cheapest_cut(order, lengths, 128, 1024, cost) for cost in COSTS}
    cuts["16 windows"] = length_grouped_batches(lengths, 16, seed=None)
    print(f"{count} sentences: {lengths.sum()} real sub-tokens, longest {lengths.max()}")
    forward(model, encoded, lengths, cuts["filled 1024"])  # warm-up
    seconds = {name: [] for name in cuts}
    for _ in range(repeats):
        for name, batches in cuts.items():
            started = time.perf_counter()
            forward(model, encoded, lengths, batches)
            seconds[name].append(time.perf_counter() - started)
    base = statistics.median(seconds["128 windows"])
    for name, batches in cuts.items():
        padded = sum(len(b) * int(lengths[b[0]]) for b in batches)
        median = statistics.median(seconds[name])
        shape = f"{len(batches):3d} batches, {padded:6d} padded sub-tokens"
        print(f"{name:>18}: {shape}, median {median:.3f} s ({median / base:.3f}x)")



if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sentences", nargs="?", type=int, default=100)
    parser.add_argument("repeats", nargs="?", type=int, default=7)
    parser.add_argument("--encoder", default="minilm-l6", help="a registered encoder (tiny: a quick check)")
    args = parser.parse_args()
    main(args.sentences, args.repeats, args.encoder)
