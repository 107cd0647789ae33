"""Corpus formats: how one split file of a corpus folder is read, by name (`format:` of a dataset).

An entry's factory is a `CorpusFormat`: the split files' extension and a reader
``(path, config, iob1) -> ConllFile`` (the sentences, the file's sha256 and what the reader
changed). Every reader reports every bad record with its file:line at once, checks tags like the
CoNLL reader and converts IOB1 (or refuses it) the same way. Plugins register their own formats
with ``@FORMATS.register(name, config)`` on a `CorpusFormat`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from nerplat.data.conll import ConllFile, read_conll
from nerplat.data.jsonl import TextSpansFormat, TokenSpansFormat, read_text_spans, read_token_spans
from nerplat.registry import Registry

DEFAULT_FORMAT = "conll"


@dataclass(frozen=True)
class CorpusFormat:
    """The factory of a format entry: `<split><extension>` files read by `read(path, config, iob1)`."""

    extension: str  # ".txt", ".jsonl"
    read: Callable[[Path, Any, str], ConllFile]

    def __call__(self, config: BaseModel, *, path: Path, iob1: str) -> ConllFile:
        return self.read(path, config, iob1)


FORMATS: Registry[CorpusFormat] = Registry("corpus format")


class ConllFormat(BaseModel):
    """Options of the CoNLL format."""

    model_config = ConfigDict(extra="forbid")
    scheme: Literal["iob", "bioes"] = Field(
        "iob", description="Tags: IOB2 (or IOB1, see iob1), or BIOES/IOBES converted to IOB2."
    )


def _read_conll(path: Path, config: ConllFormat, iob1: str) -> ConllFile:
    return read_conll(path, iob1, config.scheme)


FORMATS.register("conll", ConllFormat, summary="TOKEN<TAB>TAG lines, a blank line between sentences (<split>.txt).")(
    CorpusFormat(".txt", _read_conll)
)

FORMATS.register(
    "jsonl_tokens", TokenSpansFormat, summary="JSON Lines: tokens with token-offset spans, or tags (<split>.jsonl)."
)(CorpusFormat(".jsonl", read_token_spans))
FORMATS.register(
    "jsonl_text", TextSpansFormat, summary="JSON Lines: text with character-offset spans, tokenised by a named tokenizer."
)(CorpusFormat(".jsonl", read_text_spans))


def split_file(folder: Path, split: str, format_name: str) -> Path:
    """Where `split` of a corpus folder in `format_name` lives."""
    return folder / f"{split}{FORMATS.get(format_name).factory.extension}"



def format_of_file(path: Path) -> str:
    """The format a file is in when nobody said: a `.jsonl`/`.json` file is jsonl_text when its first
    record has "text", else jsonl_tokens; any other file is CoNLL. A broken file gets the format whose
    reader then names its line."""
    if path.suffix.lower() not in (".jsonl", ".json"):
        return DEFAULT_FORMAT
    try:
        with open(path, encoding="utf-8-sig", errors="replace") as stream:
            first = next((line for line in stream if line.strip()), "")
        record = json.loads(first)
    except (OSError, json.JSONDecodeError):
        return "jsonl_tokens"
    return "jsonl_text" if isinstance(record, dict) and "text" in record else "jsonl_tokens"
