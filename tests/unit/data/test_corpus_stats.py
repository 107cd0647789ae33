from corpus_fakes import corpus, sentence

from nerplat.data.corpus_stats import (
    corpus_stats, entity_token_share, size_factor, split_stats, unseen_labels, unseen_labels_note,
)


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


def test_table1_of_wang_and_wang_on_conll2003(conll2003):
    train = corpus_stats(conll2003)["splits"]["train"]
    # Wang & Wang 2022, Table 1 counts -DOCSTART- lines as tokens (2.26 vs 5.46 of 204,567); we do not (5.47 of 203,621)
    assert (train["least_frequent_type"]["type"], train["least_frequent_type"]["pct_tokens"]) == ("MISC", 2.26)
    assert (train["most_frequent_type"]["type"], train["most_frequent_type"]["pct_tokens"]) == ("PER", 5.47)




def test_the_note_of_thousands_of_unseen_labels_lists_twenty_and_counts_the_rest():
    """Issue 62: 5,000 unseen types made a 244 KB warning line."""
    c = corpus(["a/B-A"], dev=[" ".join(f"x/B-T{i:04d}" for i in range(5000))])
    note = unseen_labels_note(c)
    assert note.endswith("dev: B-T0000, B-T0001, B-T0002, B-T0003, B-T0004, B-T0005, B-T0006, B-T0007, B-T0008, B-T0009, "
                         "B-T0010, B-T0011, B-T0012, B-T0013, B-T0014, B-T0015, B-T0016, B-T0017, B-T0018, B-T0019, ... and "
                         "4,980 more")
