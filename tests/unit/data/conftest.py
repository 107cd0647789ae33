"""Corpora shared by the data tests: the hand-made fixtures, and CoNLL-2003 read once per session."""

from __future__ import annotations

from pathlib import Path

import pytest
from corpus_fakes import FIXTURES

from nerplat.config.trial import DatasetRef
from nerplat.data.corpora import load_corpus
from nerplat.data.corpus import Corpus


@pytest.fixture(scope="session")
def tiny() -> Corpus:
    return load_corpus(DatasetRef(path=str(FIXTURES / "tiny")))


@pytest.fixture(scope="session")
def conll2003(data_root: Path) -> Corpus:
    return load_corpus(DatasetRef(name="conll2003"))
