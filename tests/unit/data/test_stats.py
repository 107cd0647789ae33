import json

import pytest
from corpus_fakes import corpus, sentence

from nerplat.config.trial import DatasetRef
from nerplat.data.conll import read_conll
from nerplat.data.corpora import load_corpus
from nerplat.data.stats import corpus_stats, entity_token_share, size_factor, split_stats, unseen_labels

MANIFEST_FIELDS = ("sentences", "tokens", "mentions_total", "mentions_per_type", "pct_B", "pct_I", "pct_O")


def test_split_stats_by_hand():
    stats = split_stats([sentence("A/B-X b/I-X c/O d/B-Y"), sentence("e/O f/O"), sentence("g/B-X h/B-X")])
    assert stats["sentences"] == 3 and stats["tokens"] == 8
    assert stats["mentions_per_type"] == {"X": 3, "Y": 1} and stats["mentions_total"] == 4
    assert (stats["pct_B"], stats["pct_I"], stats["pct_O"]) == (50.0, 12.5, 37.5)
    assert stats["pct_sentences_with_entities"] == 66.67
    assert stats["least_frequent_type"] == {"type": "Y", "pct_tokens": 12.5}
    assert stats["most_frequent_type"] == {"type": "X", "pct_tokens": 50.0}


def test_entity_share_and_size_factor_count_tokens():
    before = [sentence("a/B-X b/O c/O d/O")]
    after = before + [sentence("e/B-X f/I-X")] * 2
    assert entity_token_share(before) == 0.25
    assert entity_token_share(after) == 5 / 8
    assert size_factor(before, after) == 2.0


def test_unseen_labels_are_listed_per_split():
    c = corpus(["a/B-X"], dev=["b/B-X c/I-X"], test=["d/B-Y"])
    assert unseen_labels(c) == {"dev": ["I-X"], "test": ["B-Y"]}
    assert corpus_stats(c)["unseen_labels"] == {"dev": ["I-X"], "test": ["B-Y"]}


def test_table1_of_002_on_conll2003(conll2003):
    train = corpus_stats(conll2003)["splits"]["train"]
    # Wang & Wang 2022, Table 1 counts -DOCSTART- lines as tokens (2.26 vs 5.46 of 204,567); we do not (5.47 of 203,621)
    assert (train["least_frequent_type"]["type"], train["least_frequent_type"]["pct_tokens"]) == ("MISC", 2.26)
    assert (train["most_frequent_type"]["type"], train["most_frequent_type"]["pct_tokens"]) == ("PER", 5.47)


def _manifest(data_root):
    return json.loads((data_root / "manifest.json").read_text())["corpora"]


OTHERS = ["anatem", "anem", "bc5cdr", "linnaeus", "ncbi_disease", "s800", "wnut17"]  # 0.1-0.6 s each


@pytest.mark.parametrize("name", ["conll2003"] + [pytest.param(n, marks=pytest.mark.slow) for n in OTHERS])
def test_stats_agree_with_the_manifest(name, data_root):
    expected = _manifest(data_root)[name]["splits"]
    ours = corpus_stats(load_corpus(DatasetRef(name=name)))["splits"]
    assert set(ours) == set(expected)
    for split, numbers in expected.items():
        assert {k: ours[split][k] for k in MANIFEST_FIELDS} == {k: numbers[k] for k in MANIFEST_FIELDS}, split


@pytest.mark.slow
def test_gmb_all_agrees_with_the_manifest(data_root):
    expected = _manifest(data_root)["gmb"]["splits"]["all"]
    read = read_conll(data_root / "gmb" / "all.txt")
    ours = split_stats(read.sentences)
    assert read.sha256 == expected["sha256"]
    assert {k: ours[k] for k in MANIFEST_FIELDS} == {k: expected[k] for k in MANIFEST_FIELDS}
