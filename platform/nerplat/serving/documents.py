"""Files `nerplat predict` reads and writes.

Input rows are what the pyfunc model takes (`{"text": ...}` or `{"tokens": [...]}`):

    text    one sentence per line (blank lines skipped), split into words by the chosen splitter
    conll   one token per line, first column (tags and other columns are ignored), blank line between
            sentences, -DOCSTART- lines skipped
    jsonl   one JSON object per line with "text" (a string) or "tokens" (a list of strings)

Files must be UTF-8 (a BOM is allowed); anything else is refused with the line it fails on.
Output: JSONL (one record per sentence: words, tags, per-word scores where the head has them, spans)
or CoNLL (`WORD<TAB>TAG`, with a third score column where the head has scores).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, TextIO

from nerplat.errors import Problem, UserInputError
from nerplat.serving.rows import row_problem

INPUT_FORMATS = ("text", "conll", "jsonl")
OUTPUT_FORMATS = ("jsonl", "conll")
_SUFFIXES = {
    ".txt": "text", ".jsonl": "jsonl", ".json": "jsonl", ".conll": "conll", ".bio": "conll", ".tsv": "conll", ".iob": "conll",
}


def input_format(path: Path, chosen: str | None) -> str:
    """`chosen`, else the format the file's suffix names; a clear error when neither says."""
    if chosen is not None:
        if chosen not in INPUT_FORMATS:
            raise UserInputError(Problem(f"--format {chosen!r}: choose one of {', '.join(INPUT_FORMATS)}", path="--format"))
        return chosen
    if path.suffix.lower() in _SUFFIXES:
        return _SUFFIXES[path.suffix.lower()]
    raise UserInputError(Problem(
        f"cannot tell the format of {path} from its suffix: pass --format {'|'.join(INPUT_FORMATS)}", str(path)
    ))


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
    rows, tokens = [], []
    for line in [*lines, ""]:
        fields = line.split()
        if fields and fields[0] != "-DOCSTART-":
            tokens.append(fields[0])
        elif tokens:
            rows.append({"tokens": tokens})
            tokens = []
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
