"""JSON Lines corpora: one sentence per line, entities as spans over tokens or over characters.

``jsonl_tokens``: ``{"tokens": ["Ada", "Lovelace", "wrote"], "spans": [{"start": 0, "end": 2, "label": "PER"}]}``
with token offsets (end exclusive), or ``"tags": [...]`` instead of spans (IOB2, IOB1, or BIOES with
``scheme: bioes``). ``jsonl_text``: ``{"text": "Ada Lovelace wrote", "spans": [{"start": 0, "end": 12,
"label": "PER"}]}`` with character offsets, tokenised by a named tokenizer (`TOKENIZERS`); a span must
start and end on token boundaries. Every bad record of a file is reported at once with its file:line;
tags then pass the CoNLL reader's checks (illegal tags, IOB1 conversion or refusal). The key that
holds the spans is ``spans`` unless the format's ``spans_key`` names another (``entities``, as many
tools write it); records without a key are reported once per key and file, with the fix. A span
is ``{"start", "end", "label"}`` or, as spaCy and doccano write it, ``[start, end, label]``.

Hostile files cost little: a line longer than `MAX_RECORD_BYTES` is refused unparsed, values quoted
in messages are cut short, and a file reports its first `PROBLEMS_SHOWN` bad records and how many
more there are. A span's label is an entity type (`PER`), never a tag (`B-PER`) or `O`, and its
offsets are integers, never `true`/`false`; a label is at most `MAX_TYPE_CHARS` long. The `words`
tokenizer keeps a character's combining marks with it (`Café` written with U+0301 is one token),
and a span may not end inside a character.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import regex
from pydantic import BaseModel, ConfigDict, Field, field_validator

from nerplat.data.conll import ConllFile, to_iob2
from nerplat.data.corpus import Sentence
from nerplat.data.tags import BIOES_TO_IOB2, OUTSIDE, bioes_to_iob2, is_legal_bioes_tag, is_legal_tag, long_type_problem
from nerplat.errors import Problem, UserInputError, shown
from nerplat.suggest import unknown_name

# What continues the character before it (Unicode's grapheme clusters): combining marks, spacing
# marks of Indic scripts, the zero-width joiner and non-joiner.
_EXTENDING = r"\p{Grapheme_Cluster_Break=Extend}\p{Grapheme_Cluster_Break=SpacingMark}\p{Grapheme_Cluster_Break=ZWJ}"
# Named tokenizers of `jsonl_text`: a regular expression whose matches are the tokens.
TOKENIZERS = {
    "whitespace": regex.compile(r"\S+"),  # tokens are the runs of non-space characters
    # words with their marks, and each other character (`\X`: an emoji sequence is one) alone
    "words": regex.compile(rf"[\w{_EXTENDING}]+|(?=\S)\X"),
}
_CONTINUES_A_CHARACTER = regex.compile(rf"[{_EXTENDING}]")
MAX_RECORD_BYTES = 1_000_000  # a sentence, or a short document; a longer line is not a record
PROBLEMS_SHOWN = 10  # of one file: a broken file can have thousands of bad records


SPANS_KEY_FIELD = Field(
    "spans", min_length=1, description="The record key holding the spans, e.g. entities (nerplat's own name: spans)."
)


class TokenSpansFormat(BaseModel):
    """Options of ``jsonl_tokens``."""

    model_config = ConfigDict(extra="forbid")
    scheme: Literal["iob", "bioes"] = Field("iob", description="Scheme of a record's `tags` (spans need none).")
    spans_key: str = SPANS_KEY_FIELD


class TextSpansFormat(BaseModel):
    """Options of ``jsonl_text``."""

    model_config = ConfigDict(extra="forbid")
    tokenizer: str = Field("words", description=f"How text becomes tokens: {', '.join(TOKENIZERS)}.")
    spans_key: str = SPANS_KEY_FIELD

    @field_validator("tokenizer")
    @classmethod
    def _known(cls, name: str) -> str:
        if name not in TOKENIZERS:
            raise ValueError(unknown_name("tokenizer", name, list(TOKENIZERS), listed_as="known"))
        return name


class _BadRecord(Exception):
    """One record that cannot be read; the message says what to write instead."""


class _MissingKey(_BadRecord):
    """A record without `key`: files that lack it lack it in every record, so it is reported once."""

    def __init__(self, key: str, keys: list[str], fix: str) -> None:
        super().__init__(key)
        self.key, self.keys, self.fix = key, keys, fix


def read_token_spans(path: Path, config: TokenSpansFormat, iob1: str) -> ConllFile:
    """Reads a ``jsonl_tokens`` file (see the module docstring)."""
    return _read_records(path, iob1, lambda record: _token_record(record, config.scheme, config.spans_key))


def read_text_spans(path: Path, config: TextSpansFormat, iob1: str) -> ConllFile:
    """Reads a ``jsonl_text`` file, tokenising each text with ``config.tokenizer``."""
    pattern = TOKENIZERS[config.tokenizer]
    return _read_records(path, iob1, lambda record: _text_record(record, pattern, config.spans_key))


def _read_records(path: Path, iob1: str, to_sentence: Callable[[Any], Sentence]) -> ConllFile:
    source = str(path)
    try:
        data = path.read_bytes()
    except OSError as error:
        raise UserInputError(Problem(f"cannot read JSONL file: {error.strerror}", source)) from None
    sentences: list[Sentence] = []
    lines: list[int] = []
    problems: list[Problem] = []
    missing: dict[str, tuple[_MissingKey, int, list[int]]] = {}  # key -> first error, its line, count
    bad = 0
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        try:
            sentence = to_sentence(_record(raw))
        except _MissingKey as error:
            missing.setdefault(error.key, (error, number, []))[2].append(number)
            continue
        except _BadRecord as error:
            bad += 1
            if bad <= PROBLEMS_SHOWN:
                problems.append(Problem(str(error), source, number))
            continue
        if sentence.tokens:
            sentences.append(sentence)
            lines.append(number)
    if bad > PROBLEMS_SHOWN:
        problems.append(Problem(f"... and {bad - PROBLEMS_SHOWN:,} more bad records in this file", source))
    for error, first, numbers in missing.values():
        records = "the record has" if len(numbers) == 1 else f"{len(numbers):,} records have"
        keys = shown(error.keys) if error.keys else "none"
        problems.append(Problem(f"{records} no '{error.key}' (keys here: {keys}): {error.fix}", source, first))
    problems.sort(key=lambda p: p.line or 0)
    if not sentences and not problems:
        problems.append(Problem("empty JSONL file: no sentences", source))
    if problems:
        raise UserInputError(problems)
    changed = to_iob2(sentences, iob1, lambda index, position: Problem("", source, lines[index]))
    return ConllFile(source, tuple(sentences), hashlib.sha256(data).hexdigest(), changed, 0)


def _record(raw: bytes) -> Any:
    """One line's JSON value; a line too long to be a record is refused unparsed."""
    if len(raw) > MAX_RECORD_BYTES:
        raise _BadRecord(
            f"the line is {len(raw):,} bytes, more than the {MAX_RECORD_BYTES:,} a record may have: "
            "write one sentence (or a short document) per line"
        )
    try:
        return json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise _BadRecord(f"not a JSON object: {error}") from None
    except RecursionError:
        raise _BadRecord("not a JSON object: it nests lists or objects too deeply") from None


def _field(record: Any, key: str, kind: type, example: str, fix: str = "") -> Any:
    if not isinstance(record, dict):
        raise _BadRecord(f"expected a JSON object per line, e.g. {example}")
    if key not in record:
        raise _MissingKey(key, list(record), fix or f"write records like {example}")
    value = record[key]
    if not isinstance(value, kind):
        raise _BadRecord(f"'{key}' must be a {kind.__name__}, not {type(value).__name__}")
    return value


def _spans_key_fix(record: dict, key: str, format_name: str) -> str:
    """How to point the format at the record's spans: the key of a list beside the known ones."""
    known = {"tokens", "text", "tags", key}
    candidates = [k for k, v in record.items() if k not in known and isinstance(v, list)]
    other = candidates[0] if len(candidates) == 1 else "KEY"
    return (
        f"name the key holding the spans on the dataset, format: {{{format_name}: {{spans_key: {other}}}}}"
        + ("" if key != "spans" else " (nerplat's own name is spans)")
    )


def _token_record(record: Any, scheme: str, spans_key: str) -> Sentence:
    example = f'{{"tokens": ["Ada", "wrote"], "{spans_key}": [{{"start": 0, "end": 1, "label": "PER"}}]}}'
    tokens = _field(record, "tokens", list, example)
    if not all(isinstance(t, str) and t.strip() and not any(c.isspace() for c in t) for t in tokens):
        raise _BadRecord("'tokens' must be non-empty strings without spaces")
    if "tags" in record and spans_key not in record:
        return Sentence(tuple(tokens), _checked_tags(_field(record, "tags", list, example), len(tokens), scheme))
    fix = _spans_key_fix(record, spans_key, "jsonl_tokens")
    spans = _spans(_field(record, spans_key, list, example, fix), len(tokens), "token")
    return Sentence(tuple(tokens), _tags_of(spans, len(tokens)))


def _text_record(record: Any, pattern: regex.Pattern, spans_key: str) -> Sentence:
    example = f'{{"text": "Ada wrote", "{spans_key}": [{{"start": 0, "end": 3, "label": "PER"}}]}}'
    text = _field(record, "text", str, example)
    found = list(pattern.finditer(text))
    fix = _spans_key_fix(record, spans_key, "jsonl_text")
    spans = _spans(_field(record, spans_key, list, example, fix), len(text), "character")
    starts = {m.start(): i for i, m in enumerate(found)}
    ends = {m.end(): i + 1 for i, m in enumerate(found)}
    token_spans = []
    for start, end, label in spans:
        split = next((offset for offset in (start, end) if _splits_a_character(text, offset)), None)
        if split is not None:
            raise _BadRecord(
                f"span [{start}, {end}) {shown(text[start:end])} splits the character {shown(text[split - 1 : split + 1])} "
                f"at offset {split} (a letter and its combining marks, or a joined emoji, are one character): "
                "move the offset past it"
            )
        if start not in starts or end not in ends:
            raise _BadRecord(
                f"span [{start}, {end}) {shown(text[start:end])} does not start and end on token boundaries "
                f"(tokens: {shown([m.group() for m in found if m.end() > start and m.start() < end])})"
            )
        token_spans.append((starts[start], ends[end], label))
    return Sentence(tuple(m.group() for m in found), _tags_of(token_spans, len(found)))


def _splits_a_character(text: str, offset: int) -> bool:
    """True where `offset` falls inside a character: before a mark that belongs to the letter ahead
    of it, or after a zero-width joiner."""
    return 0 < offset < len(text) and (bool(_CONTINUES_A_CHARACTER.match(text, offset)) or text[offset - 1] == "\u200d")


def _spans(items: list[Any], limit: int, unit: str) -> list[tuple[int, int, str]]:
    spans = []
    for item in items:
        if isinstance(item, list) and len(item) == 3:  # [start, end, label], as spaCy and doccano write them
            start, end, label = item
        elif isinstance(item, dict) and {"start", "end", "label"} <= item.keys():
            start, end, label = item["start"], item["end"], item["label"]
        else:
            raise _BadRecord(
                f'a span is {{"start": {unit} offset, "end": exclusive offset, "label": type}} or [start, end, label], '
                f"not {shown(item)}"
            )
        if type(start) is not int or type(end) is not int:  # bool is an int to Python, not to a span
            raise _BadRecord(f"span {shown(item)} needs whole-number {unit} offsets for start and end")
        if not 0 <= start < end <= limit:
            raise _BadRecord(f"span {shown(item)} is out of range: need 0 <= start < end <= {limit} ({unit}s)")
        if not isinstance(label, str) or not label.strip() or not label.isprintable() or any(c.isspace() for c in label):
            raise _BadRecord(f"span {shown(item)} needs a label without spaces, e.g. PER")
        if too_long := long_type_problem(label):
            raise _BadRecord(f"span label: {too_long}")
        if label == OUTSIDE:
            raise _BadRecord(f"span {shown(item)} is labelled O, which marks words outside entities: leave the span out")
        if len(label) > 2 and label[0] in BIOES_TO_IOB2 and label[1] == "-":
            raise _BadRecord(
                f"span {shown(item)} is labelled with the tag {shown(label)}: "
                f"a span's label is the entity type alone, {shown(label[2:])}"
            )
        spans.append((start, end, label))
    spans.sort()
    for (_, end, _), (start, _, _) in zip(spans, spans[1:]):
        if start < end:
            raise _BadRecord(f"spans overlap at {unit} {start}: nested or overlapping entities cannot be tagged in IOB2")
    return spans


def _tags_of(spans: list[tuple[int, int, str]], length: int) -> tuple[str, ...]:
    tags = [OUTSIDE] * length
    for start, end, label in spans:
        tags[start:end] = [f"B-{label}"] + [f"I-{label}"] * (end - start - 1)
    return tuple(tags)


def _checked_tags(tags: list[Any], length: int, scheme: str) -> tuple[str, ...]:
    if len(tags) != length:
        raise _BadRecord(f"{len(tags)} tags for {length} tokens")
    legal = is_legal_bioes_tag if scheme == "bioes" else is_legal_tag
    illegal = sorted({shown(t) for t in tags if not isinstance(t, str) or not legal(t)})
    if illegal:
        expected = "O or B-, I-, E-, S-TYPE" if scheme == "bioes" else "O, B-TYPE or I-TYPE"
        raise _BadRecord(f"illegal tags [{', '.join(illegal[:8])}{', ...' if len(illegal) > 8 else ''}]: expected {expected}")
    too_long = next((problem for tag in tags if tag != OUTSIDE and (problem := long_type_problem(tag[2:]))), None)
    if too_long:
        raise _BadRecord(f"tags: {too_long}")
    return bioes_to_iob2(tags) if scheme == "bioes" else tuple(tags)
