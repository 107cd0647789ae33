"""MRC examples: layout of [CLS] query [SEP] context [SEP], windows, and the gold round trip
spans -> MRC labels -> decoded spans -> tags (through the real head decoder and window join)."""

import numpy as np
import pytest
import torch

from nerplat.data.corpora import load_corpus
from nerplat.data.corpus import Sentence
from nerplat.errors import UserInputError
from nerplat.models.encoder_registry import ENCODERS
from nerplat.models.heads.base import IGNORE
from nerplat.models.heads.mrc import MRCHead, MRCOutput
from nerplat.config.trial import DatasetRef, EncoderSettings
from nerplat.trial.batching import ids_to_tags
from nerplat.trial.mrc_batching import iterate_batches, join_windows
from nerplat.trial.mrc_features import featurize_mrc

LABELS = ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]
QUERIES = ["places", "people named"]


@pytest.fixture(scope="module")
def tokenizer():
    return ENCODERS.get("tiny").factory(None)[0]


def sentence(text: str, tags: str) -> Sentence:
    return Sentence(tuple(text.split(" ")), tuple(tags.split()))


SHORT = sentence("John Smith lives in New York", "B-PER I-PER O O B-LOC I-LOC")
# 40 words with a three-word LOC every 8 words: several windows at max_length 32, spans across edges.
LONG = Sentence(
    tuple("Saint" if i % 8 == 5 else "Louis" if i % 8 in (6, 7) else f"w{i}" for i in range(40)),
    tuple("B-LOC" if i % 8 == 5 else "I-LOC" if i % 8 in (6, 7) else "O" for i in range(40)),
)


def settings(max_length: int = 64, stride: int = 8) -> EncoderSettings:
    return EncoderSettings(name="tiny", max_length=max_length, window_stride=stride)


def perfect_output(labels: torch.Tensor) -> MRCOutput:
    """Logits that say exactly what the labels say (+-10)."""
    real = labels != IGNORE
    words = labels.shape[1]
    match = labels.unsqueeze(2) == torch.arange(words)
    sign = lambda t: torch.where(t, 10.0, -10.0)  # noqa: E731
    return MRCOutput(start=sign(labels >= 0), end=sign(match.any(dim=1)), match=sign(match), mask=real)


def round_trip(features, batch_size: int = 4) -> list[list[str]]:
    head = MRCHead(8, LABELS, dropout=0.0)
    windows, predictions = [], []
    for batch in iterate_batches(features, batch_size, seed=None):
        predictions += head.decode(perfect_output(batch.labels))
        windows += batch.windows.tolist()
    return ids_to_tags(join_windows(features, windows, predictions), LABELS)


def test_an_example_is_cls_query_sep_context_sep_with_two_segments(tokenizer):
    f = featurize_mrc([SHORT], tokenizer, settings(), LABELS, QUERIES)
    assert len(f) == 2 and f.num_windows == 1  # one window, two types
    batch = next(iter(iterate_batches(f, 2, seed=None)))
    row = batch.input_ids[1][batch.attention_mask[1] == 1].tolist()
    query = tokenizer("people named", add_special_tokens=False)["input_ids"]
    context = tokenizer(list(SHORT.tokens), is_split_into_words=True, add_special_tokens=False)["input_ids"]
    assert row == [tokenizer.cls_token_id, *query, tokenizer.sep_token_id, *context, tokenizer.sep_token_id]
    segments = batch.token_type_ids[1][: len(row)].tolist()
    assert segments == [0] * (len(query) + 2) + [1] * (len(context) + 1)
    assert batch.input_ids[1, batch.word_starts[1, 0]].item() == context[0]  # "John" is read in the context
    assert batch.labels.tolist() == [[-1, -1, -1, -1, 5, -1], [1, -1, -1, -1, -1, -1]]  # LOC row, PER row


def test_gold_round_trip_is_the_identity_on_short_sentences(tokenizer):
    f = featurize_mrc([SHORT, sentence("Paris", "B-LOC")], tokenizer, settings(), LABELS, QUERIES)
    assert round_trip(f) == [list(SHORT.tags), ["B-LOC"]]


def test_gold_round_trip_is_the_identity_across_overlapping_windows(tokenizer):
    f = featurize_mrc([LONG, SHORT], tokenizer, settings(max_length=32, stride=12), LABELS, QUERIES)
    assert f.num_windows > 3  # LONG is cut into several windows
    assert not f.owned.all()  # and they overlap
    assert round_trip(f, batch_size=3) == [list(LONG.tags), list(SHORT.tags)]


def test_gold_round_trip_on_real_conll_sentences(tokenizer):
    corpus = load_corpus(DatasetRef(name="conll2003"), seed=0)
    sentences = corpus.dev[:300]
    labels = corpus.labels()
    queries = [f"{t} entities" for t in ("LOC", "MISC", "ORG", "PER")]
    f = featurize_mrc(sentences, tokenizer, settings(max_length=40, stride=12), labels, queries)
    assert f.num_windows > len(sentences)  # some sentences need more than one window
    head = MRCHead(8, labels, dropout=0.0)
    windows, predictions = [], []
    for batch in iterate_batches(f, 32, seed=None):
        predictions += head.decode(perfect_output(batch.labels))
        windows += batch.windows.tolist()
    assert ids_to_tags(join_windows(f, windows, predictions), labels) == [list(s.tags) for s in sentences]


def test_batches_hold_whole_windows_with_all_their_queries(tokenizer):
    f = featurize_mrc([SHORT] * 5, tokenizer, settings(), LABELS, QUERIES)
    batches = list(iterate_batches(f, 3, seed=1))
    assert [len(b.windows) for b in batches] == [2, 2, 1]  # ceil(3 / 2 types) windows each
    assert all(len(b.input_ids) == 2 * len(b.windows) for b in batches)
    assert sorted(w for b in batches for w in b.windows.tolist()) == list(range(5))


def test_an_evaluation_bound_counts_a_windows_k_rows_with_their_query(tokenizer):
    f = featurize_mrc([SHORT] * 5, tokenizer, settings(), LABELS, QUERIES)
    row = int(f.token_counts()[0]) + max(len(q) for q in f.queries) + f.layout.specials
    batches = list(iterate_batches(f, 64, seed=None, max_tokens=2 * 2 * row))  # two windows of 2 types
    assert [len(b.windows) for b in batches] == [2, 2, 1]
    assert all(b.input_ids.numel() <= 2 * 2 * row for b in batches)


def test_label_counts_see_each_sentence_word_once(tokenizer):
    f = featurize_mrc([LONG], tokenizer, settings(max_length=32, stride=12), LABELS, QUERIES)
    counted = f.labels[f.labels != IGNORE]
    assert len(counted) == len(LONG) and np.bincount(counted, minlength=5)[1] == 5  # five B-LOC


def test_a_query_longer_than_the_window_is_a_user_error(tokenizer):
    with pytest.raises(UserInputError, match="model.max_length"):
        featurize_mrc([SHORT], tokenizer, settings(max_length=16, stride=0), LABELS, ["places", "word " * 20])
