"""Files with gold tags that `nerplat evaluate` scores a model on, read by the corpus formats' own readers.

Any registered corpus format (`nerplat.data.formats`: conll, jsonl_tokens, jsonl_text, or a
plugin's) with its default options, IOB1 converted to IOB2 as for corpora. Without `--format`:
a `.jsonl`/`.json` file is jsonl_text when its first record has "text", else jsonl_tokens; any
other file is CoNLL.
"""

from __future__ import annotations

from pathlib import Path

from nerplat.data.corpus import Sentence
from nerplat.errors import Problem, UserInputError


def read_gold(path: Path, format_name: str | None) -> tuple[Sentence, ...]:
    """The file's sentences with their gold tags; UserInputError naming the file and line otherwise."""
    from nerplat.data.formats import FORMATS, format_of_file  # lazy: the corpus formats (regex), which --help does not need

    name = format_name or format_of_file(path)
    if name not in FORMATS:
        raise UserInputError(Problem(f"--format {name!r}: choose one of {', '.join(FORMATS.names())}", path="--format"))
    if not path.is_file():
        raise UserInputError(Problem(f"no such file: {path}", path="FILE"))
    entry = FORMATS.get(name)
    return entry.factory(entry.config(), path=path, iob1="convert").sentences
