"""JSONL formats: token spans, character spans with a named tokenizer, tags in BIOES; bad records at file:line."""

import json
import re

import pytest

from nerplat.data.jsonl import TextSpansFormat, TokenSpansFormat, read_text_spans, read_token_spans
from nerplat.errors import UserInputError


def write_lines(path, records):
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in records) + "\n", encoding="utf-8")
    return path


def test_token_spans_become_iob2_tags(tmp_path):
    path = write_lines(
        tmp_path / "train.jsonl",
        [
            {"tokens": ["Ada", "Lovelace", "visited", "New", "York"],
             "spans": [{"start": 3, "end": 5, "label": "LOC"}, {"start": 0, "end": 2, "label": "PER"}]},
            {"tokens": ["hello"], "spans": []},
        ],
    )
    read = read_token_spans(path, TokenSpansFormat(), "convert")
    assert [s.tags for s in read.sentences] == [("B-PER", "I-PER", "O", "B-LOC", "I-LOC"), ("O",)]
    assert read.iob1_tags_changed == 0 and len(read.sha256) == 64


def test_token_records_may_give_bioes_tags(tmp_path):
    path = write_lines(
        tmp_path / "train.jsonl", [{"tokens": ["Ada", "Lovelace", "in", "Paris"], "tags": ["B-PER", "E-PER", "O", "S-LOC"]}]
    )
    read = read_token_spans(path, TokenSpansFormat(scheme="bioes"), "convert")
    assert read.sentences[0].tags == ("B-PER", "I-PER", "O", "B-LOC")
    with pytest.raises(UserInputError, match=r"illegal tags \['E-PER', 'S-LOC'\].*:1"):
        read_token_spans(path, TokenSpansFormat(), "convert")


def test_every_bad_record_is_reported_with_its_line(tmp_path):
    path = write_lines(
        tmp_path / "train.jsonl",
        [
            {"tokens": ["a", "b"], "spans": [{"start": 0, "end": 1, "label": "X"}]},
            "{not json",
            {"words": ["a"]},
            {"tokens": ["a"], "spans": [{"start": 0, "end": 3, "label": "X"}]},
            {"tokens": ["a", "b"], "spans": [{"start": 0, "end": 2, "label": "X"}, {"start": 1, "end": 2, "label": "Y"}]},
        ],
    )
    with pytest.raises(UserInputError) as caught:
        read_token_spans(path, TokenSpansFormat(), "convert")
    problems = caught.value.problems
    assert [(p.source, p.line) for p in problems] == [(str(path), 2), (str(path), 3), (str(path), 4), (str(path), 5)]
    assert "not a JSON object" in problems[0].message
    assert "no 'tokens'" in problems[1].message
    assert "out of range" in problems[2].message
    assert "overlap" in problems[3].message


def test_iob1_tags_are_converted_or_refused_with_their_line(tmp_path):
    path = write_lines(
        tmp_path / "train.jsonl", [{"tokens": ["a"], "tags": ["O"]}, {"tokens": ["Ada", "wrote"], "tags": ["I-PER", "O"]}]
    )
    assert read_token_spans(path, TokenSpansFormat(), "convert").iob1_tags_changed == 1
    with pytest.raises(UserInputError) as caught:
        read_token_spans(path, TokenSpansFormat(), "refuse")
    assert caught.value.problems[0].line == 2


def test_character_spans_are_tokenised_by_the_named_tokenizer(tmp_path):
    text = "Ada Lovelace (London) wrote."
    path = write_lines(
        tmp_path / "train.jsonl",
        [{"text": text, "spans": [{"start": 0, "end": 12, "label": "PER"}, {"start": 14, "end": 20, "label": "LOC"}]}],
    )
    words = read_text_spans(path, TextSpansFormat(tokenizer="words"), "convert").sentences[0]
    assert words.tokens == ("Ada", "Lovelace", "(", "London", ")", "wrote", ".")
    assert words.tags == ("B-PER", "I-PER", "O", "B-LOC", "O", "O", "O")
    with pytest.raises(UserInputError, match=r"does not start and end on token boundaries .*'\(London\)'.*:1"):
        read_text_spans(path, TextSpansFormat(tokenizer="whitespace"), "convert")


def test_unknown_tokenizer_is_refused_with_a_suggestion():
    with pytest.raises(ValueError, match="did you mean 'words'"):
        TextSpansFormat(tokenizer="word")


def test_the_words_tokenizer_keeps_combining_marks_with_their_letter(tmp_path):
    text = "Cafe\u0301 Rouge in Sa\u0303o Paulo, \u0939\u093f\u0928\u094d\u0926\u0940 \U0001F469\u200d\U0001F4BB!"
    path = write_lines(
        tmp_path / "train.jsonl",
        [{"text": text, "spans": [{"start": 0, "end": 11, "label": "ORG"}, {"start": 15, "end": 25, "label": "LOC"}]}],
    )
    sentence = read_text_spans(path, TextSpansFormat(tokenizer="words"), "convert").sentences[0]
    assert sentence.tokens == (
        "Cafe\u0301", "Rouge", "in", "Sa\u0303o", "Paulo", ",", "\u0939\u093f\u0928\u094d\u0926\u0940",
        "\U0001F469\u200d\U0001F4BB", "!"
    )
    assert sentence.tags == ("B-ORG", "I-ORG", "O", "B-LOC", "I-LOC", "O", "O", "O", "O")


@pytest.mark.parametrize("tokenizer", ["words", "whitespace"])
@pytest.mark.parametrize(("start", "end"), [(0, 4), (6, 8)])
def test_a_span_that_splits_a_letter_from_its_accent_is_refused(tmp_path, tokenizer, start, end):
    path = write_lines(
        tmp_path / "train.jsonl",
        [{"text": "Cafe\u0301 x\u200d\U0001F4BB", "spans": [{"start": start, "end": end, "label": "ORG"}]}],
    )
    with pytest.raises(
        UserInputError,
        match=r"splits the character .* \(a letter and its combining marks, or a joined emoji, are one character\).*:1",
    ):
        read_text_spans(path, TextSpansFormat(tokenizer=tokenizer), "convert")


@pytest.mark.parametrize(
    ("span", "message"),
    [
        ({"start": 0, "end": 1, "label": "B-PER"},
         "labelled with the tag 'B-PER': a span's label is the entity type alone, 'PER'"),
        ({"start": 0, "end": 1, "label": "S-LOC"}, "labelled with the tag 'S-LOC'"),
        ({"start": 0, "end": 1, "label": "O"}, "labelled O, which marks words outside entities"),
        ({"start": False, "end": True, "label": "PER"}, "needs whole-number token offsets"),
        ({"start": 0, "end": 1.0, "label": "PER"}, "needs whole-number token offsets"),
        ({"start": 0, "end": 1, "label": "P\u001bR"}, "needs a label without spaces"),
    ],
)
def test_span_labels_are_entity_types_and_offsets_whole_numbers(tmp_path, span, message):
    path = write_lines(tmp_path / "train.jsonl", [{"tokens": ["Ada", "wrote"], "spans": [span]}])
    with pytest.raises(UserInputError, match=re.escape(message)):
        read_token_spans(path, TokenSpansFormat(), "convert")


def test_records_without_the_spans_key_are_reported_once_with_the_key_to_map(tmp_path):
    records = [{"text": f"Ada wrote {i}", "entities": [{"start": 0, "end": 3, "label": "PER"}]} for i in range(120)]
    path = write_lines(tmp_path / "train.jsonl", records)
    with pytest.raises(UserInputError) as caught:
        read_text_spans(path, TextSpansFormat(), "convert")
    [problem] = caught.value.problems
    assert problem.line == 1 and "120 records have no 'spans'" in problem.message
    assert "format: {jsonl_text: {spans_key: entities}}" in problem.message
    read = read_text_spans(path, TextSpansFormat(spans_key="entities"), "convert")
    assert len(read.sentences) == 120 and read.sentences[0].tags == ("B-PER", "O", "O")


def test_token_records_read_their_spans_from_the_mapped_key(tmp_path):
    record = {"tokens": ["Ada", "wrote"], "entities": [{"start": 0, "end": 1, "label": "PER"}]}
    path = write_lines(tmp_path / "train.jsonl", [record])
    read = read_token_spans(path, TokenSpansFormat(spans_key="entities"), "convert")
    assert read.sentences[0].tags == ("B-PER", "O")


def test_spans_may_be_start_end_label_triples_as_spacy_and_doccano_write_them(tmp_path):
    path = write_lines(tmp_path / "train.jsonl", [{"text": "Ada went to Paris", "label": [[0, 3, "PER"], [12, 17, "LOC"]]}])
    read = read_text_spans(path, TextSpansFormat(spans_key="label"), "convert")
    assert read.sentences[0].tags == ("B-PER", "O", "O", "B-LOC")
    with pytest.raises(UserInputError, match=r"or \[start, end, label\]"):
        read_text_spans(write_lines(tmp_path / "bad.jsonl", [{"text": "Ada", "spans": [[0, 3]]}]), TextSpansFormat(), "convert")
