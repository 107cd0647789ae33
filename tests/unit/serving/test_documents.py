"""Input files of `nerplat predict`: formats, encodings, empty files, and what is written back."""

from __future__ import annotations

import io
import json

import pytest

from nerplat.errors import UserInputError
from nerplat.serving.documents import input_format, read_rows, write_records


def test_each_format_reads_to_model_rows(tmp_path):
    (tmp_path / "a.txt").write_text("EU rejects German call .\n\n  \nPeter Blackburn\n")
    (tmp_path / "a.conll").write_text("-DOCSTART- O\n\nEU\tB-ORG\nrejects\tO\n\nPeter\nBlackburn\n")
    (tmp_path / "a.jsonl").write_text('{"text": "EU rejects"}\n\n{"tokens": ["Peter", "Blackburn"]}\n')
    assert read_rows(tmp_path / "a.txt", "text") == [{"text": "EU rejects German call ."}, {"text": "Peter Blackburn"}]
    assert read_rows(tmp_path / "a.conll", "conll") == [{"tokens": ["EU", "rejects"]}, {"tokens": ["Peter", "Blackburn"]}]
    assert read_rows(tmp_path / "a.jsonl", "jsonl") == [{"text": "EU rejects"}, {"tokens": ["Peter", "Blackburn"]}]
    assert [input_format(tmp_path / f"a.{s}", None) for s in ("txt", "conll", "jsonl")] == ["text", "conll", "jsonl"]


def test_a_byte_order_mark_is_allowed(tmp_path):
    (tmp_path / "bom.txt").write_bytes("\ufeffZürich is nice\n".encode("utf-8"))
    assert read_rows(tmp_path / "bom.txt", "text") == [{"text": "Zürich is nice"}]


def test_text_in_another_encoding_is_refused_with_its_line(tmp_path):
    (tmp_path / "latin.txt").write_bytes("first line\nZ\u00fcrich\n".encode("latin-1"))
    with pytest.raises(UserInputError) as error:
        read_rows(tmp_path / "latin.txt", "text")
    problem = error.value.problems[0]
    assert (problem.source, problem.line) == (str(tmp_path / "latin.txt"), 2) and "not UTF-8" in problem.message


@pytest.mark.parametrize("fmt, content", [("text", "\n  \n"), ("conll", "-DOCSTART- O\n\n"), ("jsonl", "")])
def test_empty_inputs_are_refused(tmp_path, fmt, content):
    (tmp_path / "empty").write_text(content)
    with pytest.raises(UserInputError, match="empty input"):
        read_rows(tmp_path / "empty", fmt)


def test_bad_jsonl_lines_are_all_reported(tmp_path):
    (tmp_path / "bad.jsonl").write_text('{"text": "ok"}\nnot json\n{"tokens": "a string"}\n{"text": "a \\ud800 b"}\n')
    with pytest.raises(UserInputError) as error:
        read_rows(tmp_path / "bad.jsonl", "jsonl")
    assert [p.line for p in error.value.problems] == [2, 3, 4]
    assert "lone surrogate" in error.value.problems[2].message


def test_unknown_suffix_and_format_are_refused(tmp_path):
    with pytest.raises(UserInputError, match="--format"):
        input_format(tmp_path / "a.docx", None)
    with pytest.raises(UserInputError, match="choose one of"):
        input_format(tmp_path / "a.txt", "pdf")


def test_records_are_written_as_jsonl_or_conll_with_scores():
    records = [
        {"words": ["Peter", "x"], "tags": ["B-PER", "O"], "scores": [0.91234, 0.5], "spans": []},
        {"words": ["y"], "tags": ["O"], "spans": []},
    ]
    out = io.StringIO()
    write_records(records, "conll", out)
    assert out.getvalue() == "Peter\tB-PER\t0.9123\nx\tO\t0.5000\n\ny\tO\n\n"
    out = io.StringIO()
    write_records(records, "jsonl", out)
    assert [json.loads(line) for line in out.getvalue().splitlines()] == records


@pytest.mark.parametrize("separator", ["\t", " "])
@pytest.mark.parametrize("name", ["test.txt", "corpus", "gold.tsv"])
def test_conll_is_read_as_conll_whatever_its_suffix(tmp_path, separator, name):
    path = tmp_path / name
    path.write_text(f"-DOCSTART-{separator}O\n\nEU{separator}B-ORG\nrejects{separator}O\n\nPeter{separator}B-PER\n")
    assert input_format(path, None) == "conll"
    assert read_rows(path, "conll") == [{"tokens": ["EU", "rejects"]}, {"tokens": ["Peter"]}]


def test_plain_text_given_as_conll_is_refused_rather_than_cut_to_its_first_words(tmp_path):
    path = tmp_path / "sentences.conll"
    path.write_text("Peter Blackburn visited Brussels\nEU rejects German call\n")
    with pytest.raises(UserInputError) as error:
        read_rows(path, "conll")
    assert [p.line for p in error.value.problems] == [1, 2]
    assert "--format text" in error.value.problems[0].message
    assert input_format(tmp_path / "sentences.txt", None) == "text"  # a missing file is text by its suffix
    (tmp_path / "sentences.txt").write_text("Peter Blackburn visited Brussels\n")
    assert input_format(tmp_path / "sentences.txt", None) == "text"
