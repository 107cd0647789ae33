"""The hub loader offline: the missing-package error, and the row conversion on a stand-in split."""

import sys

import pytest

from nerplat.data.hub import _split_sentences, load_hub_corpus
from nerplat.errors import UserInputError


class ClassLabel:
    def __init__(self, names):
        self.names = names


class ListOf:
    def __init__(self, feature):
        self.feature = feature


class Rows:
    """The part of a `datasets.Dataset` split the loader reads."""

    def __init__(self, columns, features=None):
        self.columns = columns
        self.column_names = list(columns)
        self.features = features or {name: None for name in columns}

    def __getitem__(self, column):
        return self.columns[column]


def test_missing_datasets_package_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "datasets", None)  # `import datasets` raises ImportError, as when not installed
    with pytest.raises(UserInputError, match=r"pip install 'nerplat\[hub\]'"):
        load_hub_corpus("eriktks/conll2003", "convert")


def test_class_label_ids_become_tags_and_iob1_is_converted():
    names = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
    rows = Rows(
        {"tokens": [["-DOCSTART-"], ["Ann", "Lee", "in", "Rome"]], "ner_tags": [[0], [2, 2, 0, 4]]},
        {"tokens": None, "ner_tags": ListOf(ClassLabel(names))},
    )
    sentences, changed = _split_sentences(rows, "hf:x", "train", "convert")
    assert changed == 2
    assert [s.tags for s in sentences] == [("B-PER", "I-PER", "O", "B-LOC")]
    with pytest.raises(UserInputError) as caught:
        _split_sentences(rows, "hf:x", "train", "refuse")
    assert [p.path for p in caught.value.problems] == ["train[1].ner_tags[0]", "train[1].ner_tags[3]"]


def test_bioes_string_tags_become_iob2():
    rows = Rows({"tokens": [["Ada", "Lovelace", "in", "Paris"]], "tags": [["B-PER", "E-PER", "O", "S-LOC"]]})
    sentences, changed = _split_sentences(rows, "hf:x", "train", "refuse")
    assert sentences[0].tags == ("B-PER", "I-PER", "O", "B-LOC") and changed == 0


def test_illegal_string_tags_are_located_by_row():
    rows = Rows({"tokens": [["a"], ["b"]], "tags": [["O"], ["X-PER"]]})
    with pytest.raises(UserInputError) as caught:
        _split_sentences(rows, "hf:x", "test", "convert")
    assert [p.path for p in caught.value.problems] == ["test[1]"]
