"""Corpora from the Hugging Face hub (``hf:eriktks/conll2003``), through the optional ``datasets`` package.

``hf:`` followed by a folder (``hf:./my_corpus``, ``hf:/data/x``) loads a ``DatasetDict`` saved with
``save_to_disk`` instead, which needs no hub. String tags may be IOB2, IOB1 or BIOES/IOBES (converted).

A hub NER dataset has a ``tokens`` column and a tag column (``ner_tags`` by convention) holding
either strings or ``ClassLabel`` ids; splits are ``train``, ``validation`` (our dev) and ``test``.
Tags pass the same checks as CoNLL files: illegal tags are reported with their split and row, and
IOB1 is converted or refused.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nerplat.data.conll import DOCSTART, sentences_sha256, to_iob2
from nerplat.data.corpus import Corpus, Sentence
from nerplat.data.tags import bioes_to_iob2, is_legal_bioes_tag, is_legal_tag
from nerplat.errors import Problem, UserInputError

HUB_SPLITS = {"train": ("train",), "dev": ("validation", "dev", "valid"), "test": ("test",)}
TAG_COLUMNS = ("ner_tags", "tags", "labels")


def load_hub_corpus(hub_id: str, iob1: str) -> Corpus:
    """Downloads (or reads from the local HF cache) ``hub_id`` and turns it into a Corpus."""
    try:
        import datasets
    except ImportError:
        raise UserInputError(
            f"corpus 'hf:{hub_id}' needs the Hugging Face datasets package: pip install 'nerplat[hub]'"
        ) from None
    saved = Path(hub_id).expanduser()
    try:
        dataset = datasets.load_from_disk(str(saved)) if is_saved_folder(hub_id) else datasets.load_dataset(hub_id)
    except Exception as error:  # the hub raises many types (offline, missing, gated, bad script)
        where = f"the folder {saved}" if is_saved_folder(hub_id) else "the Hugging Face hub"
        raise UserInputError(f"cannot load 'hf:{hub_id}' from {where}: {error}") from None
    if isinstance(dataset, datasets.Dataset):
        raise UserInputError(f"hf:{hub_id} holds one split; save a DatasetDict with train (and validation, test) splits")
    source = f"hf:{hub_id}"
    splits: dict[str, tuple[Sentence, ...]] = {}
    problems: list[Problem] = []
    notes: list[str] = []
    for split, candidates in HUB_SPLITS.items():
        name = next((c for c in candidates if c in dataset), None)
        if name is None:
            continue
        try:
            sentences, changed = _split_sentences(dataset[name], source, name, iob1)
        except UserInputError as error:
            problems += error.problems
            continue
        splits[split] = sentences
        if changed:
            notes.append(f"{source} {name}: IOB1 converted to IOB2, {changed} tags changed")
    if "train" not in splits and not problems:
        problems.append(Problem(f"hub dataset has no train split (it has: {', '.join(dataset)})", source))
    if problems:
        raise UserInputError(problems)
    return Corpus(
        name=source,
        train=splits["train"],
        dev=splits.get("dev"),
        test=splits.get("test"),
        checksums={split: sentences_sha256(s) for split, s in splits.items()},
        notes=tuple(notes),
    )


def is_saved_folder(hub_id: str) -> bool:
    """True when ``hf:`` names a folder written by ``save_to_disk`` rather than a hub id."""
    return hub_id.startswith((".", "/", "~"))  # never a hub id (spec.schema refuses those with '..' or a leading '.')


def _split_sentences(rows: Any, source: str, split: str, iob1: str) -> tuple[tuple[Sentence, ...], int]:
    column = next((c for c in TAG_COLUMNS if c in rows.column_names), None)
    if "tokens" not in rows.column_names or column is None:
        raise UserInputError(
            Problem(f"split '{split}' needs a 'tokens' column and one of {', '.join(TAG_COLUMNS)}", source)
        )
    feature = getattr(rows.features[column], "feature", None)
    names = getattr(feature, "names", None)  # ClassLabel ids -> tag strings
    sentences: list[Sentence] = []
    row_of: list[int] = []  # row of each kept sentence, to locate IOB1 tags
    problems: list[Problem] = []
    for row, (tokens, tags) in enumerate(zip(rows["tokens"], rows[column])):
        tags = tuple(names[t] for t in tags) if names else tuple(tags)
        if not all(is_legal_tag(t) for t in tags) and all(is_legal_bioes_tag(t) for t in tags):
            tags = bioes_to_iob2(tags)
        illegal = sorted({t for t in tags if not is_legal_tag(t)})
        if illegal:
            message = f"illegal tags {illegal}: expected O, B-TYPE or I-TYPE (or BIOES: S-, E-)"
            problems.append(Problem(message, source, path=f"{split}[{row}]"))
        elif tokens and list(tokens) != [DOCSTART]:
            sentences.append(Sentence(tuple(tokens), tags))
            row_of.append(row)
    if problems:
        raise UserInputError(problems)

    def where(index: int, position: int) -> Problem:
        return Problem("", source, path=f"{split}[{row_of[index]}].{column}[{position}]")

    changed = to_iob2(sentences, iob1, where)
    return tuple(sentences), changed
