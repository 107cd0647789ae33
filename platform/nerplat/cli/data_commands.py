"""`nerplat data stats`, `nerplat data sample` and `nerplat data fetch`: look at a corpus, at what a
sampler makes of it, and get a registered public corpus from its source.

Both print a readable table by default and JSON (on stdout, nothing else there) with ``--json``.
DATASET is a registered corpus name, ``hf:<id>``, a folder holding ``train.txt``, or one file (read
with a spec's default ``split: {dev: 0.1, test: 0.1, seed: 0}``).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import typer
import yaml
from rich.console import Console
from rich.table import Table

from nerplat.cli.options import err_console, message_console
from nerplat.config.trial import Component, DatasetRef, FileSplit
from nerplat.data.conll import write_conll
from nerplat.data.corpus import Corpus
from nerplat.data.corpus_stats import corpus_stats, token_count
from nerplat.errors import Problem, UserInputError
from nerplat.unfolded import print_unfolded

data_app = typer.Typer(
    name="data", help="Corpora: statistics, what samplers make of them, and fetching the public ones.", no_args_is_help=True
)

DATASET_HELP = (
    "Registered corpus name (see `nerplat registry`), hf:<hub id or saved folder>, a folder of split files, or one file "
    "(split as a spec's default split: {dev: 0.1, test: 0.1, seed: 0})."
)
FORMAT_OPTION = typer.Option(
    None, "--format",
    help="Format of a folder's files: conll, jsonl_tokens, jsonl_text, ... (`nerplat registry`). Default: conll; for one "
    ".jsonl file, jsonl_text when its first record has text, else jsonl_tokens.",
)


def register(app: typer.Typer) -> None:
    """Adds the `data` command group to the app."""
    app.add_typer(data_app, name="data")


def dataset_ref(text: str, iob1: str = "convert", data_format: str | None = None) -> DatasetRef:
    """A name when it is registered or a hub id, a path when it is an existing folder or file (a file
    with a spec's default split, in `data_format` or the one its name and first record say), else a
    name (to fail with hints)."""
    # lazy: the corpus readers (regex), which --help does not need
    from nerplat.data.corpora import CORPORA, HUB_PREFIX
    from nerplat.data.formats import DEFAULT_FORMAT, format_of_file

    path = Path(text)
    if text in CORPORA or text.startswith(HUB_PREFIX) or not path.exists():
        return DatasetRef(name=text, iob1=iob1)
    if path.is_file():
        chosen = Component(name=data_format or format_of_file(path))
        return DatasetRef(path=text, iob1=iob1, format=chosen, split=FileSplit())
    return DatasetRef(path=text, iob1=iob1, format=Component(name=data_format or DEFAULT_FORMAT))


def _load(dataset: str, iob1: str, seed: int = 0, data_format: str | None = None) -> Corpus:
    from nerplat.data.corpora import load_corpus  # lazy: the corpus readers (regex), which --help does not need

    with err_console.status(f"reading {dataset}"):
        return load_corpus(dataset_ref(dataset, iob1, data_format), seed=seed)


def _print_json(payload: dict[str, Any]) -> None:
    typer.echo(json.dumps(payload, indent=2, ensure_ascii=False))


@data_app.command("stats")
def stats(
    dataset: str = typer.Argument(..., help=DATASET_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print JSON (the manifest's fields and more) on stdout."),
    iob1: str = typer.Option("convert", help="IOB1 input: convert it to IOB2, or refuse it."),
    data_format: str | None = FORMAT_OPTION,
) -> None:
    """Per split: sentences, tokens, mentions per type, % B/I/O, % sentences with entities, type shares."""
    if iob1 not in ("convert", "refuse"):
        raise UserInputError(Problem(f"--iob1 must be convert or refuse, got {iob1!r}", path="--iob1"))
    result = corpus_stats(_load(dataset, iob1, data_format=data_format))
    if as_json:
        _print_json(result)
        return
    console = Console(emoji=False, highlight=False, markup=False)
    table = Table(title=f"{result['corpus']}", title_justify="left")
    table.add_column("split", no_wrap=True)
    for column in ("sent.", "tokens", "mentions", "%B", "%I", "%O", "%sent.w/ent."):
        table.add_column(column, justify="right", no_wrap=True)
    for name, split in result["splits"].items():
        row = (split["sentences"], split["tokens"], split["mentions_total"], split["pct_B"], split["pct_I"], split["pct_O"])
        table.add_row(name, *(str(v) for v in row), str(split["pct_sentences_with_entities"]))
    console.print(table)
    types = sorted({t for split in result["splits"].values() for t in split["mentions_per_type"]})
    mentions = Table(title="mentions per type", title_justify="left")
    mentions.add_column("type")
    for name in result["splits"]:
        mentions.add_column(name, justify="right")
    for kind in types:
        mentions.add_row(kind, *(str(s["mentions_per_type"].get(kind, 0)) for s in result["splits"].values()))
    console.print(mentions)
    for name, split in result["splits"].items():
        least, most = split["least_frequent_type"], split["most_frequent_type"]
        if least:
            print_unfolded(
                console,
                f"{name}: least frequent type {least['type']} ({least['pct_tokens']}% of tokens), "
                f"most frequent {most['type']} ({most['pct_tokens']}%)",
                hanging=2, markup=False,
            )  # fmt: skip
    for split, labels in result["unseen_labels"].items():
        print_unfolded(console, f"warning: {split} has labels absent from train: {', '.join(labels)}", 2, False)
    for note in result["notes"]:
        print_unfolded(console, f"note: {note}", hanging=2, markup=False)


def parse_params(pairs: list[str]) -> dict[str, Any]:
    """``['size=50', 'formula=paper']`` -> ``{'size': 50, 'formula': 'paper'}`` (values read as YAML scalars)."""
    params: dict[str, Any] = {}
    problems = []
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            problems.append(Problem(f"expected KEY=VALUE, got {pair!r}", path="--param"))
        elif key in params:
            problems.append(Problem(f"parameter '{key}' given twice", path=f"--param {key}"))
        else:
            try:
                params[key] = yaml.safe_load(value) if value.strip() else ""
            except yaml.YAMLError:
                params[key] = value
    if problems:
        raise UserInputError(problems)
    return params


def _at_param(error: UserInputError) -> UserInputError:
    """A sampler's problems located at the --param flag of the parameter each names."""
    return UserInputError([replace(p, path=f"--param {p.path}" if p.path else "--param") for p in error.problems])


@data_app.command("sample")
def sample(
    dataset: str = typer.Argument(..., help=DATASET_HELP),
    sampler: str = typer.Option(..., "--sampler", help="Registered sampler name (see `nerplat registry`)."),
    param: list[str] = typer.Option([], "--param", help="Sampler parameter KEY=VALUE; repeatable."),
    seed: int = typer.Option(0, "--seed", help="Seed of random samplers (and of a carved dev split)."),
    partition: int = typer.Option(0, "--partition", help="Partition index for partitioned samplers (low_resource)."),
    out: Path | None = typer.Option(
        None, "--out", help="Write the sampled corpus here as CoNLL (train.txt, and the other splits)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON on stdout."),
    data_format: str | None = FORMAT_OPTION,
) -> None:
    """Apply one sampler to DATASET and summarise the training set it makes."""
    # lazy: the sampler entries, which --help does not need
    from nerplat.data.samplers import SAMPLERS, apply_samplers, entity_token_share, size_factor

    if sampler not in SAMPLERS:
        raise UserInputError(Problem(SAMPLERS.unknown_message(sampler), path="--sampler"))
    params = parse_params(param)
    try:
        config = SAMPLERS.config(sampler, params)
    except UserInputError as error:
        raise _at_param(error) from None
    if out is not None and out.exists() and not out.is_dir():
        raise UserInputError(Problem(
            f"{out} exists and is not a folder: --out names the folder the sampled split files go in", path="--out"
        ))
    corpus = _load(dataset, "convert", seed, data_format)
    try:
        sampled = apply_samplers(corpus, [Component(name=sampler, params=params)], seed=seed, partition=partition)
    except UserInputError as error:  # a request this corpus cannot meet, e.g. more sentences than train has
        raise _at_param(error) from None
    summary: dict[str, Any] = {
        "dataset": corpus.name,
        "sampler": sampler,
        "params": config.model_dump(),
        "seed": seed,
        "partition": partition,
        "sentences": len(sampled.train),
        "tokens": token_count(sampled.train),
        "size_factor": round(size_factor(corpus.train, sampled.train), 4),
        "sentence_factor": round(len(sampled.train) / len(corpus.train), 4),
        "entity_token_share": round(entity_token_share(sampled.train), 4),
        "entity_token_share_before": round(entity_token_share(corpus.train), 4),
        "note": sampled.notes[-1],
        "train_sha256": sampled.checksums["train_sampled"],
    }
    if out is not None:
        for name, sentences in sampled.splits().items():
            write_conll(out / f"{name}.txt", sentences)
        summary["out"] = str(out)
    if as_json:
        _print_json(summary)
        return
    table = Table(show_header=False, box=None)
    for key, value in summary.items():
        table.add_row(key, str(value))
    Console(emoji=False, highlight=False, markup=False).print(table)


@data_app.command("fetch")
def fetch(
    name: str = typer.Argument(
        ..., help="Registered corpus: conll2003, wnut17, ncbi_disease, bc5cdr, linnaeus, anatem, anem, gmb."
    ),
    root: Path | None = typer.Option(
        None, "--root", envvar="NERPLAT_DATA", show_envvar=False,
        help="Folder of the corpora (default: where runs read them: $NERPLAT_DATA, else ../shared/data beside the "
        "repository); the corpus goes into ROOT/NAME.",
    ),
    source: str | None = typer.Option(
        None, "--source",
        help="Read from here instead of the registered source: a URL folder holding the same files (file:///... for a "
        "local copy), or hf:<hub id or save_to_disk folder>.",
    ),
    as_json: bool = typer.Option(
        False, "--json", help="Print {corpus, folder, source, matches_reference, splits} as JSON on stdout."
    ),
) -> None:
    """Download a public corpus from its source (pinned to a commit), check it against the reference
    statistics nerplat ships (sha256, sentences, tokens, mentions per type of every split) and write it
    as TOKEN<TAB>TAG split files into ROOT/NAME. Nothing is written when a check fails.

    Exit codes: 0 written; 2 unknown name, no network or source, a folder already there, or a copy that
    differs from the reference.
    """
    from nerplat.data.fetch import fetch_corpus  # lazy: the corpus readers (regex), which --help does not need

    from nerplat.data.corpora import data_root  # lazy: the corpus readers (regex), which --help does not need

    root = root or data_root()
    if root is None:
        raise UserInputError(Problem("set NERPLAT_DATA (the folder runs read corpora from) or give --root", path="--root"))
    notes = message_console(stderr=True)
    fetched = fetch_corpus(name, root, source, log=lambda line: print_unfolded(notes, line, hanging=2, markup=False))
    payload = {
        "corpus": name, "folder": str(fetched.folder), "source": fetched.source,
        "matches_reference": fetched.matches_reference, "splits": fetched.splits,
    }  # fmt: skip
    if as_json:
        _print_json(payload)
        return
    console = Console(emoji=False, highlight=False, markup=False)
    table = Table(title=f"{name}: {fetched.folder}", title_justify="left")
    table.add_column("split")
    for column in ("sentences", "tokens", "mentions"):
        table.add_column(column, justify="right")
    for split, stats in fetched.splits.items():
        table.add_row(split, str(stats["sentences"]), str(stats["tokens"]), str(sum(stats["mentions_per_type"].values())))
    console.print(table)
    if fetched.matches_reference:
        console.print("every split matches the reference copy byte for byte (sha256)")
    else:
        console.print("note: sentences, tokens and mentions per type match the reference copy; the text differs (sha256)")
