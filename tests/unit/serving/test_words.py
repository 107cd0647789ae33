"""Plain text -> words with character offsets."""

from __future__ import annotations

import pytest

from nerplat.serving.words import split_words


@pytest.fixture(scope="module")
def tokenizer(softmax_bundle):
    return softmax_bundle.tokenizer


def test_encoder_splitting_cuts_punctuation_like_the_tokenizer(tokenizer):
    text = "EU rejects Germany's call."
    words = split_words(text, tokenizer)
    assert [w for w, _ in words] == ["EU", "rejects", "Germany", "'", "s", "call", "."]
    assert all(text[start:end] == word for word, (start, end) in words)


def test_whitespace_splitting_keeps_tokens_whole(tokenizer):
    assert split_words("EU  rejects Germany's", tokenizer, "whitespace") == [
        ("EU", (0, 2)), ("rejects", (4, 11)), ("Germany's", (12, 21))
    ]


def test_unknown_splitter_is_refused(tokenizer):
    with pytest.raises(ValueError, match="encoder, whitespace"):
        split_words("x", tokenizer, "spacy")
