"""A corpus format: one sentence per line, each token written TOKEN/TAG (`Ada/B-PER wrote/O`), in
`<split>.wsl` files. Bad lines are reported with their file:line; tags pass nerplat's IOB checks."""

from __future__ import annotations

import hashlib
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from nerplat.data.conll import ConllFile, to_iob2
from nerplat.data.corpus import Sentence
from nerplat.data.formats import FORMATS, CorpusFormat
from nerplat.data.tags import is_legal_tag
from nerplat.errors import Problem, UserInputError


class WordSlashConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")


def read_word_slash(path: Path, config: WordSlashConfig, iob1: str) -> ConllFile:
    data = path.read_bytes()
    sentences, lines, problems = [], [], []
    for number, line in enumerate(data.decode("utf-8").splitlines(), start=1):
        pairs = [item.rpartition("/") for item in line.split()]
        if not pairs:
            continue
        bad = [token + slash + tag for token, slash, tag in pairs if not token or not slash or not is_legal_tag(tag)]
        if bad:
            problems.append(Problem(f"expected TOKEN/TAG items with IOB tags, got {bad[0]!r}", str(path), number))
            continue
        sentences.append(Sentence(tuple(t for t, _, _ in pairs), tuple(g for _, _, g in pairs)))
        lines.append(number)
    if problems or not sentences:
        raise UserInputError(problems or [Problem("no sentences", str(path))])
    changed = to_iob2(sentences, iob1, lambda index, position: Problem("", str(path), lines[index]))
    return ConllFile(str(path), tuple(sentences), hashlib.sha256(data).hexdigest(), changed, 0)


FORMATS.register("word_slash", WordSlashConfig, summary="One sentence per line of TOKEN/TAG items (example plugin).")(
    CorpusFormat(".wsl", read_word_slash)
)
