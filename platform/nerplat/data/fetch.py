"""`nerplat data fetch NAME`: a registered corpus from its public source into ``$NERPLAT_DATA/NAME``.

Each public corpus's registration (``data/corpora.py``) names its source: the repository files
(pinned to a commit) its reference copy was built from, read as the corpus layer reads CoNLL
(first column the token, last the tag, ``-DOCSTART-`` skipped, IOB1 converted to IOB2), or, for
GMB, the Kaggle CSV in its zip. What is fetched is checked against the reference statistics
shipped in ``reference_corpora.json`` (the sha256 of each split's canonical CoNLL text, and its
sentences, tokens and mentions per type) before anything is written; the folder then appears
whole (written beside it, then renamed).

``--source`` replaces the registered location: another base URL (``file:///folder/`` included)
holding the same file names (a local folder may hold nerplat's own ``train.txt``, ... instead),
or ``hf:<hub id or save_to_disk folder>`` read by `data.hub`.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import tempfile
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from nerplat.data.conll import parse_conll, sentences_sha256, write_conll
from nerplat.data.corpora import CORPORA, HUB_PREFIX, SPLITS
from nerplat.data.corpus import Sentence
from nerplat.data.corpus_stats import split_stats
from nerplat.data.hub import load_hub_corpus
from nerplat.errors import Problem, UserInputError

REFERENCE_FILE = Path(__file__).with_name("reference_corpora.json")
DOWNLOAD_TIMEOUT_S = 60


def read_conll_bytes(data: bytes, url: str) -> tuple[Sentence, ...]:
    """A downloaded CoNLL file's sentences (IOB1 converted, -DOCSTART- skipped); problems name `url`."""
    return parse_conll(data, url, "convert").sentences


def read_gmb_csv_zip(data: bytes, url: str) -> tuple[Sentence, ...]:
    """GMB's Kaggle `ner_dataset.csv` (cp1252, columns `Sentence #, Word, POS, Tag`, a sentence starting
    where `Sentence #` is filled) inside its zip; whitespace inside a token becomes `_`."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            member = next(n for n in archive.namelist() if n.endswith(".csv"))
            text = archive.read(member).decode("cp1252")
    except (zipfile.BadZipFile, StopIteration, UnicodeDecodeError) as error:
        raise UserInputError(Problem(f"not GMB's ner_dataset.csv zip: {error}", url)) from None
    sentences: list[Sentence] = []
    tokens: list[str] = []
    tags: list[str] = []
    rows = csv.reader(io.StringIO(text))
    next(rows, None)  # header
    for row in rows:
        if len(row) < 4:
            continue
        if row[0].strip() and tokens:
            sentences.append(Sentence(tuple(tokens), tuple(tags)))
            tokens, tags = [], []
        tokens.append("_".join(row[1].split()) or "_")
        tags.append(row[3].strip())
    if tokens:
        sentences.append(Sentence(tuple(tokens), tuple(tags)))
    return tuple(sentences)


READERS: dict[str, Callable[[bytes, str], tuple[Sentence, ...]]] = {"conll": read_conll_bytes, "gmb_csv_zip": read_gmb_csv_zip}


def reference_statistics() -> dict[str, dict]:
    """Corpus folder -> its source and, per split, the sha256 and statistics of the reference copy."""
    return json.loads(REFERENCE_FILE.read_text(encoding="utf-8"))


def split_statistics(sentences: tuple[Sentence, ...]) -> dict:
    """What the reference records of a split: sha256 of its canonical text, sentences, tokens, mentions per type."""
    stats = split_stats(sentences)
    return {"sha256": sentences_sha256(sentences), **{key: stats[key] for key in ("sentences", "tokens", "mentions_per_type")}}


def download(url: str) -> bytes:
    """The bytes at `url` (https or file); an unreachable source is a user error naming it."""
    try:
        with urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT_S) as response:  # noqa: S310 (the registry's or the user's URL)
            return response.read()
    except (urllib.error.URLError, OSError, ValueError) as error:
        if url.startswith("file://") and not _local_file(url).exists():
            raise UserInputError(Problem(f"no file {_local_file(url)}: the --source folder lacks it", path="--source")) from None
        reason = getattr(error, "reason", error)
        raise UserInputError(
            Problem(f"cannot download {url}: {reason} (offline? give a local copy with --source FOLDER_URL or hf:<saved folder>)")
        ) from None


@dataclass(frozen=True)
class Fetched:
    folder: Path
    splits: dict[str, dict]  # split -> statistics of what was written
    source: str
    matches_reference: bool  # every split's sha256 equals the reference copy's


def fetch_corpus(name: str, root: Path, source: str | None = None, log: Callable[[str], None] = lambda line: None) -> Fetched:
    """Downloads corpus `name` from its registered source (or `source`), checks it against the
    reference statistics and writes it as CoNLL split files into ``root/<folder>``.

    Raises UserInputError (nothing written) when the name has no source, the source cannot be read,
    the folder exists, or what was read differs from the reference in its statistics.
    """
    if name not in CORPORA:
        raise UserInputError(Problem(
            f"{CORPORA.unknown_message(name)}. Your own corpus needs no fetch: give its folder (train.txt, dev.txt, "
            "test.txt) or one file in the spec, dataset: {path: FOLDER} or dataset: {path: FILE, split: {dev: 0.1, "
            "test: 0.1, seed: 0}}"
        ))
    entry = CORPORA.get(name).factory
    folder_name = entry.folder
    reference = reference_statistics().get(folder_name)
    target = root / folder_name
    if root.exists() and not root.is_dir():
        raise UserInputError(Problem(
            f"{root} is not a folder: give the folder corpora go in (runs read them from $NERPLAT_DATA)", path="--root"
        ))
    if target.exists():
        raise UserInputError(Problem(f"{target} already exists: remove it first to fetch {name} anew"))
    registered = entry.source
    if registered is None and source is None:
        raise UserInputError(Problem(
            f"corpus '{name}' has no public source nerplat can fetch: {entry.no_source or 'none is registered'}"
        ))
    if reference is None:
        raise UserInputError(Problem(f"corpus '{name}' has no reference statistics to check a fetched copy against"))
    splits = tuple(split for split in (*SPLITS, "all") if split in reference["splits"])
    if source is not None and source.startswith(HUB_PREFIX):
        log(f"writing {name} into {target} (where runs read corpora from)")
        sentences = _hub_splits(source[len(HUB_PREFIX):], splits)
        where = source
    else:
        files = registered.files if registered is not None else {split: f"{split}.txt" for split in splits}
        reader = READERS[registered.reader if registered is not None else "conll"]
        base = source or registered.base
        urls = {split: _split_url(base.rstrip("/"), files[split], split, local=source is not None) for split in splits}
        _check_local_files(urls, files)
        log(f"writing {name} into {target} (where runs read corpora from)")
        sentences = {}
        for split, url in urls.items():
            log(f"downloading {url}")
            sentences[split] = reader(download(url), url)
        where = base
    statistics = {split: split_statistics(sentences[split]) for split in splits}
    _check_against_reference(name, statistics, reference["splits"])
    _write_folder(target, sentences)
    matches = all(statistics[s]["sha256"] == reference["splits"][s]["sha256"] for s in splits)
    return Fetched(target, statistics, where, matches)


def _split_url(base: str, upstream: str, split: str, local: bool) -> str:
    """A split's file under `base`: the upstream name, or in a local folder (file://) nerplat's own
    `<split>.txt` (what `data fetch` and `data sample --out` write) when the upstream one is not there."""
    url = f"{base}/{upstream}"
    if not (local and base.startswith("file://")):
        return url
    own = f"{base}/{split}.txt"
    if _local_file(url).is_file() or not _local_file(own).is_file():
        return url
    return own


def _check_local_files(urls: dict[str, str], upstream: dict[str, str]) -> None:
    """Every split file of a local (file://) source, or all those it lacks named at once, by nerplat's
    own name (and the upstream one it may hold instead), before anything is read or written."""
    missing = [split for split, url in urls.items() if url.startswith("file://") and not _local_file(url).is_file()]
    if not missing:
        return
    folder = _local_file(urls[missing[0]]).parent
    names = ", ".join(
        f"{split}.txt" + (f" (or the upstream {upstream[split]})" if upstream[split] != f"{split}.txt" else "")
        for split in missing
    )
    raise UserInputError(Problem(f"the --source folder {folder} lacks {names}", path="--source"))


def _local_file(url: str) -> Path:
    return Path(urllib.request.url2pathname(urllib.parse.urlparse(url).path))


def _hub_splits(hub_id: str, splits: tuple[str, ...]) -> dict[str, tuple[Sentence, ...]]:
    corpus = load_hub_corpus(hub_id, "convert")
    found = corpus.splits()
    missing = [split for split in splits if split not in found]
    if missing:
        raise UserInputError(Problem(f"hf:{hub_id} lacks the split(s) {', '.join(missing)} the corpus has", path="--source"))
    return {split: tuple(found[split]) for split in splits}


def _check_against_reference(name: str, statistics: dict[str, dict], reference: dict[str, dict]) -> None:
    """Same sentences, tokens and mentions per type in every split as the reference copy, else every difference."""
    problems = []
    for split, expected in reference.items():
        got = statistics[split]
        for key in ("sentences", "tokens", "mentions_per_type"):
            if got[key] != expected[key]:
                problems.append(Problem(f"{name} {split}: {key} {got[key]} where the reference copy has {expected[key]}"))
    if problems:
        raise UserInputError(problems)


def _write_folder(target: Path, sentences: dict[str, tuple[Sentence, ...]]) -> None:
    """The split files in a folder beside `target`, renamed to it once all are written."""
    target.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        for split, rows in sentences.items():
            write_conll(scratch / f"{split}.txt", rows)
        os.replace(scratch, target)
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise
