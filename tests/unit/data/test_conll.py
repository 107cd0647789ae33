import os
from pathlib import Path

import pytest

from nerplat.data.conll import read_conll, render_conll, sentences_sha256, write_conll
from nerplat.errors import UserInputError

from corpus_fakes import FIXTURES, sentence


def write(tmp_path: Path, text: str, name: str = "train.txt") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_reads_tab_separated_sentences_and_checksums_the_bytes(tmp_path):
    path = write(tmp_path, "John\tB-PER\nran\tO\n\nIt\tO\n")
    read = read_conll(path)
    assert read.sentences == (sentence("John/B-PER ran/O"), sentence("It/O"))
    assert read.iob1_tags_changed == 0
    assert read.sha256 == sentences_sha256(read.sentences)  # canonical file: same bytes


def test_iob1_with_docstart_and_space_columns_is_converted_and_counted():
    read = read_conll(FIXTURES / "iob1_spaces" / "train.txt")
    assert read.docstart_lines == 2
    assert read.iob1_tags_changed == 5
    assert [s.tokens[0] for s in read.sentences] == ["EU", "Peter", "BRUSSELS"]
    assert read.sentences[2].tags == ("B-LOC", "O", "B-LOC", "B-LOC")
    assert read.sentences[1].tags == ("B-PER", "I-PER")


def test_iob1_refused_names_file_and_line():
    with pytest.raises(UserInputError) as caught:
        read_conll(FIXTURES / "iob1_spaces" / "train.txt", iob1="refuse")
    located = [(p.source.endswith("train.txt"), p.line) for p in caught.value.problems]
    assert located == [(True, 3), (True, 5), (True, 8), (True, 13), (True, 15)]
    assert "iob1: convert" in caught.value.problems[0].message


def test_every_unreadable_line_and_illegal_tag_is_reported_with_its_line(tmp_path):
    path = write(tmp_path, "John\tB-PER\nlonely\n\nx\tS-PER\ny\tO\nz\tB-\n")
    with pytest.raises(UserInputError) as caught:
        read_conll(path)
    problems = caught.value.problems
    assert [(p.source, p.line) for p in problems] == [(str(path), 2), (str(path), 4), (str(path), 6)]
    assert "expected TOKEN<TAB>TAG" in problems[0].message
    assert "'S-PER'" in problems[1].message and f"{path}:4" in str(problems[1])


def test_non_utf8_line_is_located(tmp_path):
    path = tmp_path / "train.txt"
    path.write_bytes(b"ok\tO\nbad\xff\tO\n")
    with pytest.raises(UserInputError) as caught:
        read_conll(path)
    assert [(p.line, "UTF-8" in p.message) for p in caught.value.problems] == [(2, True)]


@pytest.mark.parametrize("text", ["", "\n\n", "-DOCSTART-\tO\n\n"])
def test_empty_file_is_an_error(tmp_path, text):
    with pytest.raises(UserInputError, match="empty CoNLL file"):
        read_conll(write(tmp_path, text))


def test_missing_file_is_a_user_error(tmp_path):
    with pytest.raises(UserInputError, match="cannot read"):
        read_conll(tmp_path / "nope.txt")


def test_writer_round_trips_and_replaces_atomically(tmp_path):
    sentences = (sentence("A/B-X b/I-X"), sentence("c/O"))
    target = write_conll(tmp_path / "out" / "train.txt", sentences)
    assert target.read_text() == "A\tB-X\nb\tI-X\n\nc\tO\n" == render_conll(sentences)
    assert read_conll(target).sentences == sentences
    write_conll(target, sentences[:1])
    assert read_conll(target).sentences == sentences[:1]
    assert sorted(os.listdir(target.parent)) == ["train.txt"]  # no temporary left behind


def test_writer_leaves_the_old_file_when_rendering_fails(tmp_path):
    target = write(tmp_path, "a\tO\n")

    def broken():
        yield sentence("b/O")
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        write_conll(target, broken())
    assert target.read_text() == "a\tO\n"
    assert sorted(os.listdir(tmp_path)) == ["train.txt"]


def test_a_utf8_byte_order_mark_is_not_part_of_the_first_token(tmp_path):
    path = tmp_path / "train.txt"
    path.write_bytes(b"\xef\xbb\xbfJohn\tB-PER\nran\tO\n")
    assert read_conll(path).sentences == (sentence("John/B-PER ran/O"),)


def test_a_control_character_is_refused_with_its_line(tmp_path):
    path = write(tmp_path, "John\tB-PER\nran\tO\x00\n")
    with pytest.raises(UserInputError, match="line holds control character #x0000: remove it") as raised:
        read_conll(path)
    assert [p.line for p in raised.value.problems] == [2]
