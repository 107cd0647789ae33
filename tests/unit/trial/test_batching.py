import random

import numpy as np
import pytest
import torch

from nerplat.config.trial import EncoderSettings
from nerplat.data.corpus import Sentence
from nerplat.models.encoder_registry import ENCODERS
from nerplat.models.heads.base import IGNORE
from nerplat.trial.batching import collate, ids_to_tags, iterate_batches, join_windows, length_grouped_batches
from nerplat.trial.features import featurize

LABELS = ["O", "B-X", "I-X"]


@pytest.fixture(scope="module")
def features(tmp_path_factory):
    tokenizer = ENCODERS.get("tiny").factory(None)[0]
    rng = random.Random(0)
    sentences = []
    for n in [3, 40, 1, 7, 25, 2, 60, 5]:
        tags = tuple(rng.choice(LABELS) for _ in range(n))
        sentences.append(Sentence(tuple(f"tok{i}" for i in range(n)), tags))
    settings = EncoderSettings(name="tiny", max_length=32, window_stride=8)
    return sentences, featurize(sentences, tokenizer, settings, LABELS, cache_dir=tmp_path_factory.mktemp("cache"))


def test_batches_cover_every_item_once_and_group_similar_lengths():
    rng = np.random.default_rng(0)
    lengths = rng.integers(5, 200, size=1000)
    batches = length_grouped_batches(lengths, 16, seed=3, batches_per_group=8)
    assert sorted(np.concatenate(batches).tolist()) == list(range(1000))
    assert sum(len(b) < 16 for b in batches) == 1  # only the last group (104 items) leaves a short batch
    padded = sum(len(b) * lengths[b].max() for b in batches)
    random_padded = sum(len(b) * lengths[b].max() for b in np.array_split(rng.permutation(1000), len(batches)))
    assert padded < 0.75 * random_padded


def test_batches_are_seeded_and_change_with_the_seed():
    lengths = np.arange(100) % 17
    first = length_grouped_batches(lengths, 8, seed=1)
    assert [b.tolist() for b in first] == [b.tolist() for b in length_grouped_batches(lengths, 8, seed=1)]
    assert [b.tolist() for b in first] != [b.tolist() for b in length_grouped_batches(lengths, 8, seed=2)]


def _padded(batches, lengths):
    return sum(len(b) * lengths[b].max() for b in batches)


def test_batches_of_a_small_training_set_change_every_epoch():
    lengths = np.random.default_rng(5).integers(4, 60, size=50)
    epochs = [length_grouped_batches(lengths, 16, seed=100_003 + epoch) for epoch in range(1, 11)]
    compositions = [frozenset(frozenset(b.tolist()) for b in batches) for batches in epochs]
    assert all(a != b for a, b in zip(compositions, compositions[1:]))


@pytest.mark.parametrize("items, least_batches", [(100, 5), (256, 3)])
def test_a_group_sorts_at_most_a_quarter_of_the_items(items, least_batches):
    """Sorting a whole small set as one group put its 16 longest items in one or two batches every
    epoch, which cost short trainings accuracy; with groups of at most a quarter of the items they
    spread over several (100 items: one batch a group, batches drawn at random)."""
    lengths = np.arange(items)
    for seed in range(1, 6):
        batches = length_grouped_batches(lengths, 16, seed=seed)
        holding_longest = {i for i, batch in enumerate(batches) if (batch >= items - 16).any()}
        assert len(holding_longest) >= least_batches


def test_without_a_seed_batches_are_sorted_longest_first():
    lengths = np.array([3, 9, 1, 9, 4])
    batches = length_grouped_batches(lengths, 2, seed=None)
    assert [b.tolist() for b in batches] == [[1, 3], [4, 0], [2]]


def test_without_a_seed_max_tokens_bounds_each_batchs_padded_size():
    """100 windows of CoNLL-like lengths in one batch pad to the longest; a padded-size bound cuts them
    by length, longest first, and a window longer than the bound still gets a batch of its own."""
    lengths = np.array([64] + [20] * 99)
    (whole,) = length_grouped_batches(lengths, 128, seed=None)
    assert _padded([whole], lengths) == 6400
    bounded = length_grouped_batches(lengths, 128, seed=None, max_tokens=1024)
    assert all(len(b) * lengths[b[0]] <= 1024 for b in bounded)
    assert bounded[0].tolist() == [0] and sorted(np.concatenate(bounded).tolist()) == list(range(100))
    # The long window alone, then 99 of 20 in the fewest batches 1,024 allows: nothing padded.
    assert len(bounded) == 3 and _padded(bounded, lengths) == lengths.sum()
    counted = length_grouped_batches(lengths, 40, seed=None, max_tokens=1024)  # the count bound too
    assert len(counted) == 4 and max(len(b) for b in counted) == 40
    assert [len(b) for b in length_grouped_batches(np.array([300, 5]), 8, seed=None, max_tokens=100)] == [1, 1]


def test_max_tokens_leaves_training_batches_as_they_were():
    lengths = np.random.default_rng(2).integers(4, 60, size=200)
    seeded = length_grouped_batches(lengths, 16, seed=7)
    assert [b.tolist() for b in length_grouped_batches(lengths, 16, seed=7, max_tokens=64)] == [b.tolist() for b in seeded]


def test_collate_pads_dynamically(features):
    _, f = features
    windows = [0, 2, 1]
    batch = collate(f, windows)
    token_counts, word_counts = f.token_counts()[windows], [len(f.window(w).word_index) for w in windows]
    assert batch.input_ids.shape == (3, max(token_counts))
    assert batch.word_starts.shape == batch.labels.shape == batch.word_mask.shape == (3, max(word_counts))
    assert batch.word_mask.dtype == torch.bool and batch.input_ids.dtype == torch.long
    for row, w in enumerate(windows):
        window = f.window(w)
        n, m = len(window.input_ids), len(window.word_index)
        assert batch.input_ids[row, :n].tolist() == window.input_ids.tolist()
        assert (batch.input_ids[row, n:] == int(f.pad_id)).all()
        assert batch.attention_mask[row].tolist() == [1] * n + [0] * (batch.input_ids.shape[1] - n)
        assert batch.word_starts[row, :m].tolist() == window.word_starts.tolist()
        assert (batch.word_starts[row, m:] == 0).all()
        assert batch.labels[row, :m].tolist() == window.labels.tolist()
        assert (batch.labels[row, m:] == IGNORE).all()
        assert batch.word_mask[row].tolist() == [True] * m + [False] * (batch.word_mask.shape[1] - m)
    assert batch.windows.tolist() == windows
    assert batch.real_tokens() == sum(token_counts)


def test_gold_labels_joined_back_from_shuffled_batches_are_the_sentences_tags(features):
    sentences, f = features
    windows, predictions = [], []
    for batch in iterate_batches(f, 3, seed=5):
        windows.extend(batch.windows.tolist())
        predictions.extend(row[mask].tolist() for row, mask in zip(batch.labels, batch.word_mask))
    assert len(f) > len(sentences)  # some sentences were windowed
    assert ids_to_tags(join_windows(f, windows, predictions), LABELS) == [list(s.tags) for s in sentences]


def test_join_windows_refuses_missing_or_wrong_length_predictions(features):
    _, f = features
    windows = list(range(len(f)))
    predictions = [[0] * len(f.window(w).word_index) for w in windows]
    with pytest.raises(ValueError, match="every word"):
        join_windows(f, windows[1:], predictions[1:])
    with pytest.raises(ValueError, match="owns"):
        join_windows(f, windows, [p + [0] for p in predictions])
