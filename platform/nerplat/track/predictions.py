"""Test-set predictions as a CoNLL file: `TOKEN<TAB>GOLD<TAB>PRED` per line, a blank line per sentence.

Tab-separated like the corpora, so tokens may contain spaces; `conlleval -d '\\t'` scores it,
and so does re-reading it with `read_conll_predictions`. Written atomically (temp file, then
`os.replace`), so a killed replicate never leaves half a file behind; the temp file is created as
`open` creates files (0666 less the umask), so the logged artifact is readable as the others are
(mkstemp's 0600 made 6 of a run's 94 artifacts private).
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Sequence
from pathlib import Path

Sentences = Sequence[Sequence[str]]


def write_conll_predictions(path: Path, tokens: Sentences, gold: Sentences, pred: Sentences) -> Path:
    """Writes one line per token; the three arguments are parallel lists of sentences."""
    if not len(tokens) == len(gold) == len(pred):
        raise ValueError(f"got {len(tokens)} token, {len(gold)} gold and {len(pred)} predicted sentences")
    lines: list[str] = []
    for index, columns in enumerate(zip(tokens, gold, pred)):
        lengths = {len(column) for column in columns}
        if len(lengths) != 1 or 0 in lengths:
            raise ValueError(f"sentence {index}: tokens, gold and predicted tags must be non-empty and equally long")
        for token, gold_tag, pred_tag in zip(*columns):
            cells = (token, gold_tag, pred_tag)
            if any(not cell or any(c in cell for c in "\t\r\n") for cell in cells):
                raise ValueError(f"sentence {index}: empty cell or tab/newline in {cells!r}")
            lines.append("\t".join(cells))
        lines.append("")
    path = Path(path)
    temp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    try:
        with open(temp, "x", encoding="utf-8") as out:
            out.write("\n".join(lines) + ("\n" if lines else ""))
        os.replace(temp, path)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    return path


def read_conll_predictions(path: Path) -> tuple[list[list[str]], list[list[str]], list[list[str]]]:
    """The inverse of `write_conll_predictions`: (tokens, gold, pred) as lists of sentences."""
    tokens: list[list[str]] = []
    gold: list[list[str]] = []
    pred: list[list[str]] = []
    sentence: list[list[str]] = []
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines() + [""], start=1):
        if line:
            cells = line.split("\t")
            if len(cells) != 3:
                raise ValueError(f"{path}:{number}: expected TOKEN<TAB>GOLD<TAB>PRED, got {line!r}")
            sentence.append(cells)
        elif sentence:
            columns = list(zip(*sentence))
            tokens.append(list(columns[0]))
            gold.append(list(columns[1]))
            pred.append(list(columns[2]))
            sentence = []
    return tokens, gold, pred
