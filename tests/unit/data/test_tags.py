from nerplat.data.tags import iob1_to_iob2, iob2_violations, is_legal_tag, mentions, strict_mentions


def test_legal_tags_are_o_and_prefixed_types():
    assert all(map(is_legal_tag, ["O", "B-PER", "I-Multi-tissue_structure"]))
    assert not any(map(is_legal_tag, ["", "B", "B-", "S-PER", "E-LOC", "b-per", "PER", "o"]))


def test_iob2_violations_are_i_tags_that_open_a_mention():
    assert iob2_violations(["I-PER", "I-PER", "O", "I-LOC", "B-LOC", "I-ORG"]) == [0, 3, 5]
    assert iob2_violations(["B-PER", "I-PER", "B-PER", "O"]) == []


def test_iob1_conversion_changes_only_mention_openers():
    iob1 = ["I-LOC", "O", "I-LOC", "B-LOC", "I-LOC", "I-PER"]
    assert iob1_to_iob2(iob1) == ("B-LOC", "O", "B-LOC", "B-LOC", "I-LOC", "B-PER")


def test_mentions_are_maximal_spans():
    tags = ["B-PER", "I-PER", "B-PER", "O", "B-LOC", "I-LOC", "I-LOC"]
    assert mentions(tags) == [("PER", 0, 2), ("PER", 2, 3), ("LOC", 4, 7)]
    assert mentions(["O", "O"]) == []


def test_strict_mentions_leave_out_an_i_tag_that_opens_a_mention():
    tags = ["I-PER", "I-PER", "O", "B-LOC", "I-LOC", "I-ORG", "B-ORG"]
    assert strict_mentions(tags) == [("LOC", 3, 5), ("ORG", 6, 7)]
    assert mentions(tags) == [("PER", 0, 2), ("LOC", 3, 5), ("ORG", 5, 6), ("ORG", 6, 7)]
