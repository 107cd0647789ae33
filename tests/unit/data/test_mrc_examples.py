"""MRC on the data side: queries, span targets per window, the overlap rule, spans back to tags."""

import json

import pytest

from nerplat.data.mrc_examples import (
    DEFAULT_TEMPLATE,
    entity_types,
    queries_for,
    resolve_overlaps,
    spans_to_tags,
    window_span_ends,
)
from nerplat.errors import UserInputError

TAGS = ["B-PER", "I-PER", "O", "B-LOC", "B-LOC", "I-LOC", "O"]
TYPES = ["LOC", "PER"]


def test_types_follow_the_label_order():
    assert entity_types(["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]) == ["LOC", "PER"]


def test_span_ends_mark_each_start_with_its_last_word_per_type():
    ends = window_span_ends(TAGS, 0, len(TAGS), TYPES)
    assert ends == [[-1, 1], [-1, -1], [-1, -1], [3, -1], [5, -1], [-1, -1], [-1, -1]]


def test_spans_crossing_the_window_edge_are_clipped_to_it():
    assert window_span_ends(TAGS, 1, 5, TYPES) == [[-1, 0], [-1, -1], [2, -1], [3, -1]]  # PER 0-1 -> 1-1, LOC 4-5 -> 4-4


def test_overlaps_keep_the_higher_score_then_the_earlier_start():
    kept = resolve_overlaps([(0.6, 0, 2, 0), (0.9, 1, 1, 1), (0.7, 3, 4, 0), (0.7, 2, 3, 1), (0.5, 5, 5, 0)])
    # 0.9 (1,1) first; of the 0.7 tie the earlier start (2,3) goes first and blocks (3,4); (0,2) overlaps (1,1)
    assert kept == [(1, 1, 1), (2, 3, 1), (5, 5, 0)]


def test_overlap_ties_prefer_the_shorter_span_then_the_first_type():
    assert resolve_overlaps([(0.8, 0, 3, 0), (0.8, 0, 1, 1), (0.8, 0, 1, 0)]) == [(0, 1, 0)]


def test_spans_become_iob2_tags():
    assert spans_to_tags([("PER", 0, 1), ("LOC", 3, 3), ("LOC", 4, 5)], 7) == TAGS


def test_queries_from_a_file_must_cover_every_type(tmp_path):
    path = tmp_path / "queries.json"
    path.write_text(json.dumps({"LOC": "places", "PER": "people"}))
    assert queries_for(TYPES, "anything", str(path)) == ["places", "people"]
    path.write_text(json.dumps({"LOC": "places"}))
    with pytest.raises(UserInputError, match=r"queries.json has no query for entity type\(s\) PER"):
        queries_for(TYPES, "anything", str(path))


@pytest.mark.parametrize("content", ["not json", "[1, 2]", '{"LOC": ""}'])
def test_unreadable_query_files_name_the_file(tmp_path, content):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(UserInputError, match="bad.json"):
        queries_for(TYPES, "conll2003", str(path))


def test_bundled_queries_for_conll_and_the_template_elsewhere():
    conll = queries_for(["LOC", "MISC", "ORG", "PER", "ENT"], "conll2003", None)
    assert conll[3].startswith("person entities") and conll[4] == DEFAULT_TEMPLATE.format(type="ENT")
    assert queries_for(["Disease"], "ncbi_disease", None) == ["find all Disease entities in the text."]
