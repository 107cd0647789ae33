"""CoNLL files: one ``TOKEN<TAB>TAG`` line per token, a blank line between sentences.

The reader is strict about what it cannot interpret and lenient about layout: columns may be
separated by tabs or spaces (the first column is the token, the last the tag, anything between is
ignored), a UTF-8 byte-order mark is dropped, ``-DOCSTART-`` lines are skipped, and IOB1 input is
converted to IOB2 (or refused).
Every unreadable line and illegal tag of a file is reported at once, with its file:line, up to
`PROBLEMS_SHOWN` of them and then how many more there are.
"""

from __future__ import annotations

import codecs
import hashlib
import os
import re
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from nerplat.data.corpus import Sentence
from nerplat.data.tags import (
    OUTSIDE, bioes_to_iob2, iob1_to_iob2, iob2_violations, is_legal_bioes_tag, is_legal_tag, long_type_problem,
)
from nerplat.errors import Problem, UserInputError, shown

DOCSTART = "-DOCSTART-"
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")  # never text; a NUL would become part of a tag
PROBLEMS_SHOWN = 10  # of one file: a broken file has thousands of bad lines; the first few locate the fault


@dataclass(frozen=True)
class ConllFile:
    """Sentences of one file, with what the reader did to them."""

    path: str
    sentences: tuple[Sentence, ...]
    sha256: str  # of the file's bytes
    iob1_tags_changed: int  # tags rewritten from IOB1 to IOB2; 0 when the file was IOB2
    docstart_lines: int


def read_conll(
    path: str | os.PathLike, iob1: Literal["convert", "refuse"] = "convert", scheme: Literal["iob", "bioes"] = "iob"
) -> ConllFile:
    """Reads and validates one CoNLL file.

    Raises
    ------
    UserInputError
        with one problem per unreadable line or illegal tag (file:line), for an empty file, and,
        with ``iob1="refuse"``, for IOB1 input. ``scheme="bioes"`` reads BIOES/IOBES tags as IOB2.
    """
    source = str(path)
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        raise UserInputError(Problem(f"cannot read CoNLL file: {error.strerror}", source)) from None
    return parse_conll(data, source, iob1, scheme)


def parse_conll(
    data: bytes, source: str, iob1: Literal["convert", "refuse"] = "convert", scheme: Literal["iob", "bioes"] = "iob"
) -> ConllFile:
    """`read_conll` of a file's bytes; `source` (a path or URL) is what problems name."""
    lines, problems = _decode_lines(data.removeprefix(codecs.BOM_UTF8), source)  # not part of the first token
    sentences, starts, docstarts, parse_problems = _parse_lines(lines, source, scheme == "bioes")
    problems += parse_problems
    if scheme == "bioes":
        sentences = [Sentence(s.tokens, bioes_to_iob2(s.tags)) for s in sentences]
    if not sentences and not problems:
        problems.append(Problem("empty CoNLL file: no sentences", source))
    if len(problems) > PROBLEMS_SHOWN:
        problems = problems[:PROBLEMS_SHOWN] + [
            Problem(f"... and {len(problems) - PROBLEMS_SHOWN:,} more problems in this file", source)
        ]
    if problems:
        raise UserInputError(problems)

    def where(index: int, position: int) -> Problem:
        return Problem("", source, starts[index] + position)

    changed = to_iob2(sentences, iob1, where)
    return ConllFile(source, tuple(sentences), hashlib.sha256(data).hexdigest(), changed, docstarts)


def to_iob2(
    sentences: list[Sentence], iob1: Literal["convert", "refuse"], where: Callable[[int, int], Problem]
) -> int:
    """Converts IOB1 ``sentences`` to IOB2 in place and returns how many tags changed.

    ``where(sentence_index, position)`` locates a tag for the error raised with ``iob1="refuse"``
    (a Problem whose message is replaced).
    """
    violations = [(index, p) for index, s in enumerate(sentences) for p in iob2_violations(s.tags)]
    if violations and iob1 == "refuse":
        problems = [
            replace(
                where(index, position),
                message=f"tag {sentences[index].tags[position]!r} opens a mention, which IOB2 forbids "
                "(IOB1 input); set iob1: convert to convert it",
            )
            for index, position in violations[:PROBLEMS_SHOWN]
        ]
        if len(violations) > PROBLEMS_SHOWN:
            more = f"... and {len(violations) - PROBLEMS_SHOWN} more IOB1 tags"
            problems.append(replace(where(*violations[0]), message=more, line=None, path=None))
        raise UserInputError(problems)
    for index in sorted({index for index, _ in violations}):
        sentence = sentences[index]
        sentences[index] = Sentence(sentence.tokens, iob1_to_iob2(sentence.tags))
    return len(violations)


def _decode_lines(data: bytes, source: str) -> tuple[list[str], list[Problem]]:
    try:
        return data.decode("utf-8").split("\n"), []
    except UnicodeDecodeError:
        pass
    lines, problems = [], []
    for number, raw in enumerate(data.split(b"\n"), start=1):
        try:
            lines.append(raw.decode("utf-8"))
        except UnicodeDecodeError:
            problems.append(Problem("line is not UTF-8 text", source, number))
            lines.append("")
    return lines, problems


def _parse_lines(
    lines: Sequence[str], source: str, bioes: bool = False
) -> tuple[list[Sentence], list[int], int, list[Problem]]:
    """Sentences, the line number each starts on, the count of -DOCSTART- lines, and problems."""
    sentences: list[Sentence] = []
    starts: list[int] = []
    problems: list[Problem] = []
    legal: dict[str, bool] = {}
    tokens: list[str] = []
    tags: list[str] = []
    docstarts = 0

    def close(line_number: int) -> None:
        if tokens:
            sentences.append(Sentence(tuple(tokens), tuple(tags)))
            starts.append(line_number - len(tokens))
            tokens.clear()
            tags.clear()

    for number, line in enumerate(lines, start=1):
        fields = line.rstrip("\r").split("\t") if "\t" in line else line.split(" ")
        fields = [f.strip() for f in fields if f.strip()]
        if not fields:
            close(number)
            continue
        if fields[0] == DOCSTART:
            docstarts += 1
            close(number)
            continue
        control = _CONTROL.search(line.rstrip("\r"))
        if control:
            problems.append(Problem(f"line holds control character #x{ord(control.group()):04x}: remove it", source, number))
            continue
        if len(fields) < 2:
            problems.append(Problem(f"cannot read line {shown(line.strip())}: expected TOKEN<TAB>TAG", source, number))
            continue
        tag = fields[-1]
        if legal.setdefault(tag, is_legal_bioes_tag(tag) if bioes else is_legal_tag(tag)):
            if too_long := tag != OUTSIDE and long_type_problem(tag[2:]):
                problems.append(Problem(too_long, source, number))
                continue
            tokens.append(fields[0])
            tags.append(tag)
        else:
            expected = "O or B-, I-, E-, S-TYPE" if bioes else "O, B-TYPE or I-TYPE"
            problems.append(Problem(f"illegal tag {shown(tag)}: expected {expected}", source, number))
    close(len(lines) + 1)
    return sentences, starts, docstarts, problems


def render_conll(sentences: Iterable[Sentence]) -> str:
    """The canonical text: ``TOKEN\\tTAG`` lines, one blank line between sentences, final newline."""
    blocks = ("\n".join(f"{t}\t{g}" for t, g in zip(s.tokens, s.tags)) for s in sentences)
    text = "\n\n".join(blocks)
    return text + "\n" if text else ""


def sentences_sha256(sentences: Iterable[Sentence]) -> str:
    """sha256 of the canonical rendering; equals the file's sha256 for the normalised shared corpora."""
    return hashlib.sha256(render_conll(sentences).encode("utf-8")).hexdigest()


def write_conll(path: str | os.PathLike, sentences: Iterable[Sentence]) -> Path:
    """Writes ``sentences`` atomically (temporary file in the same folder, then ``os.replace``)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="\n") as stream:
            stream.write(render_conll(sentences))
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return target
