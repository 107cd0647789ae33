"""Helpers for the data tests: sentences written inline, and the path of the hand-made corpora."""

from __future__ import annotations

from pathlib import Path

from nerplat.data.corpus import Corpus, Sentence

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "corpora"


def sentence(text: str) -> Sentence:
    """``'John/B-PER ran/O'`` -> Sentence."""
    pairs = [item.rsplit("/", 1) for item in text.split()]
    return Sentence(tuple(t for t, _ in pairs), tuple(g for _, g in pairs))


def corpus(train: list[str], dev: list[str] | None = None, test: list[str] | None = None) -> Corpus:
    def split(texts: list[str] | None) -> tuple[Sentence, ...] | None:
        return None if texts is None else tuple(sentence(t) for t in texts)

    return Corpus("inline", split(train), split(dev), split(test))
