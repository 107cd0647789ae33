"""Files `nerplat predict` reads and writes.

Input rows are what the pyfunc model takes (`{"text": ...}` or `{"tokens": [...]}`):

    text    one sentence per line (blank lines skipped), split into words by the chosen splitter
    conll   one token per line, first column (a last column holding a tag, and columns between, are
            ignored), blank line between sentences, -DOCSTART- lines skipped; a line of several
            words that does not end in a tag is plain text, refused with the line
    jsonl   one JSON object per line with "text" (a string) or "tokens" (a list of strings)

Without --format the suffix names the format, except that a file whose lines each end in a tag
(`TOKEN<TAB>TAG` or `TOKEN TAG`, as nerplat's own `.txt` corpora are) is CoNLL whatever its suffix:
its tags must never become words.

Files must be UTF-8 (a BOM is allowed); anything else is refused with the line it fails on.
Output: JSONL (one record per sentence: words, tags, per-word scores where the head has them, spans)
or CoNLL (`WORD<TAB>TAG`, with a third score column where the head has scores).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, TextIO

from nerplat.data.tags import is_legal_tag
from nerplat.errors import Problem, UserInputError, shown
from nerplat.serving.rows import row_problem

INPUT_FORMATS = ("text", "conll", "jsonl")
OUTPUT_FORMATS = ("jsonl", "conll")
_SUFFIXES = {
    ".txt": "text", ".jsonl": "jsonl", ".json": "jsonl", ".conll": "conll", ".bio": "conll", ".tsv": "conll", ".iob": "conll",
}
SNIFFED_LINES = 200  # lines of a file looked at to tell CoNLL from text
PROBLEMS_SHOWN = 10  # of one file


def input_format(path: Path, chosen: str | None) -> str:
    """`chosen`, else CoNLL when the file's lines end in tags, else the format its suffix names; a
    clear error when none says."""
    if chosen is not None:
        if chosen not in INPUT_FORMATS:
            raise UserInputError(Problem(f"--format {chosen!r}: choose one of {', '.join(INPUT_FORMATS)}", path="--format"))
        return chosen
    by_suffix = _SUFFIXES.get(path.suffix.lower())
    if by_suffix != "jsonl" and _lines_end_in_tags(path):
        return "conll"
    if by_suffix is not None:
        return by_suffix
    raise UserInputError(Problem(
        f"cannot tell the format of {path} from its suffix: pass --format {'|'.join(INPUT_FORMATS)}", str(path)
    ))


def _lines_end_in_tags(path: Path) -> bool:
    """True when the file's first non-blank lines (-DOCSTART- aside) are all `TOKEN ... TAG`."""
    try:
        with open(path, encoding="utf-8-sig", errors="replace") as stream:
            lines = [line.split() for _, line in zip(range(SNIFFED_LINES * 4), stream)]
    except OSError:
        return False  # read_rows names the problem
    fields = [f for f in lines if f and f[0] != "-DOCSTART-"][:SNIFFED_LINES]
    return bool(fields) and all(len(f) >= 2 and is_legal_tag(f[-1]) for f in fields)


def read_rows(path: Path, fmt: str) -> list[dict[str, Any]]:
    """The file's sentences as model input rows; raises UserInputError naming file and line."""
    try:
        data = path.read_bytes()
    except OSError as error:
        raise UserInputError(Problem(f"cannot read input: {error.strerror}", str(path))) from None
    lines = _decode(data, str(path)).splitlines()
    rows = {"text": _text_rows, "conll": _conll_rows, "jsonl": _jsonl_rows}[fmt](lines, str(path))
    if not rows:
        raise UserInputError(Problem(f"empty input: no sentences in this {fmt} file", str(path)))
    return rows


def _decode(data: bytes, source: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise UserInputError(
            Problem(
                f"not UTF-8 text (byte 0x{data[error.start]:02x} at offset {error.start}): convert it first, "
                "e.g. `iconv -f latin1 -t utf-8 FILE > FILE.utf8`",
                source,
                line,
            )
        ) from None


def _text_rows(lines: list[str], source: str) -> list[dict[str, Any]]:
    return [{"text": line} for line in lines if line.strip()]


def _conll_rows(lines: list[str], source: str) -> list[dict[str, Any]]:
    """Sentences of the first column; a line of several words without a tag at its end is text, which
    would lose every word but its first."""
    rows, tokens, problems = [], [], []
    for number, line in enumerate([*lines, ""], start=1):
        fields = line.split()
        if len(fields) > 1 and not is_legal_tag(fields[-1]) and fields[0] != "-DOCSTART-":
            problems.append(Problem(
                f"{shown(line.strip())} is not a CoNLL line (TOKEN, or TOKEN<TAB>TAG): "
                "a file of sentences, one a line, is read with --format text", source, number,
            ))  # fmt: skip
        elif fields and fields[0] != "-DOCSTART-":
            tokens.append(fields[0])
        elif tokens:
            rows.append({"tokens": tokens})
            tokens = []
    if len(problems) > PROBLEMS_SHOWN:
        problems = problems[:PROBLEMS_SHOWN] + [
            Problem(f"... and {len(problems) - PROBLEMS_SHOWN:,} more lines that are not CoNLL", source)
        ]
    if problems:
        raise UserInputError(problems)
    return rows


def _jsonl_rows(lines: list[str], source: str) -> list[dict[str, Any]]:
    rows, problems = [], []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            problems.append(Problem(f"not JSON: {error.msg}", source, number))
            continue
        text = record.get("text") if isinstance(record, dict) else None
        tokens = record.get("tokens") if isinstance(record, dict) else None
        if isinstance(text, str):
            row: dict[str, Any] = {"text": text}
        elif isinstance(tokens, list) and all(isinstance(t, str) for t in tokens):
            row = {"tokens": tokens}
        else:
            problems.append(Problem('expected an object with "text" (a string) or "tokens" (a list of strings)', source, number))
            continue
        if (problem := row_problem(row)) is not None:  # a lone surrogate: valid JSON, but not text
            problems.append(Problem(problem, source, number))
        else:
            rows.append(row)
    if problems:
        raise UserInputError(problems)
    return rows


def write_records(records: Iterable[dict[str, Any]], fmt: str, stream: TextIO) -> None:
    """Appends predictions to `stream` in `fmt` (see the module docstring)."""
    for record in records:
        if fmt == "jsonl":
            stream.write(json.dumps(record, ensure_ascii=False) + "\n")
            continue
        scores = record.get("scores")
        for index, (word, tag) in enumerate(zip(record["words"], record["tags"])):
            stream.write(f"{word}\t{tag}" + (f"\t{scores[index]:.4f}" if scores is not None else "") + "\n")
        stream.write("\n")
