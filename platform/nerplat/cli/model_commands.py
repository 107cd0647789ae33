"""`nerplat models`, `export`, `predict`, `evaluate`, `serve`: get a trained tagger out of MLflow and use it.

MODEL is a registered model (NAME, NAME/VERSION, NAME@ALIAS), a models:/ URI, a run id, an MLflow
model folder (`nerplat export` of a non-softmax head) or a bundle folder (`nerplat train --save`);
see `nerplat.serving.references`. The tagger is read from its folder where a local store keeps it
(a remote store's model is downloaded once into a cache), without MLflow's pyfunc loader.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from nerplat.cli.options import Verbosity, message_console, package_version
from nerplat.data.tags import SPAN_RULES, entity_type
from nerplat.errors import Problem, UserInputError
from nerplat.metrics import evaluate_tags
from nerplat.serving.documents import OUTPUT_FORMATS, input_format as choose_format, read_rows, write_records
from nerplat.serving.files import check_output_file, check_output_folder, write_output_file
from nerplat.serving.gold import read_gold
from nerplat.serving.mlflow_models import registered_versions
from nerplat.serving.words import WORD_SPLITTERS
from nerplat.track.store import check_store, resolve_tracking_uri, sqlite_path
from nerplat.unfolded import print_message, print_unfolded

MODEL_ARGUMENT = typer.Argument(..., help="Registered NAME\\[/VERSION|@ALIAS], models:/ URI, run id, or a model folder.")
TRACKING_OPTION = typer.Option(
    None, "--tracking-uri", help="MLflow store. Default: $MLFLOW_TRACKING_URI, else <workdir>/mlflow.db."
)
WORKDIR_OPTION = typer.Option(Path("."), "--workdir", help="Directory where `nerplat run` keeps its local store.")
BATCH_OPTION = typer.Option(32, "--batch-size", min=1, help="Windows per forward pass.")


def register(app: typer.Typer) -> None:
    app.command("models")(list_models)
    app.command("export")(export)
    app.command("predict")(predict)
    app.command("evaluate")(evaluate)
    app.command("serve")(serve)


def _tracking_uri(tracking_uri: str | None, workdir: Path) -> str:
    uri = tracking_uri or resolve_tracking_uri(None, workdir)
    database = sqlite_path(uri)
    if database is not None and not database.exists():
        raise UserInputError(
            Problem(
                f"no MLflow store at {database}: run `nerplat run SPEC` in {workdir.resolve()} first, or pass --tracking-uri",
                path="--tracking-uri",
            )
        )
    check_store(uri, create=False)  # read-only: never create or migrate a store
    return uri


def _open(model: str, tracking_uri: str | None, workdir: Path):
    """MODEL's tagger (`OpenedModel`), resolved against the store (a local folder needs none).

    A registered model or a run's model of a local SQLite store is looked up without MLflow when
    that is certain (`folder_on_disk`): seconds less for a one-sentence predict.
    """
    # lazy: torch (the tagger's modules), which `--help` and bad input never need
    from nerplat.serving.references import ModelReference, folder_on_disk, open_model, resolve_model

    if Path(model).is_dir():
        return open_model(resolve_model(model, ""), "")
    folder = folder_on_disk(model, tracking_uri or resolve_tracking_uri(None, workdir))
    if folder is not None:
        return open_model(ModelReference(str(folder), None, model), "")
    uri = _tracking_uri(tracking_uri, workdir)
    return open_model(resolve_model(model, uri), uri)


def list_models(
    as_json: bool = typer.Option(
        False, "--json", help="Print a JSON list: name, version, aliases, uri, run_id, test metrics, selected epoch."
    ),
    tracking_uri: str | None = TRACKING_OPTION,
    workdir: Path = WORKDIR_OPTION,
) -> None:
    """List registered taggers: every version with its run, test metrics and selected epoch.

    A table when the terminal is wide enough for the full names, else each name on its own line
    (the name is what predict, evaluate, export and serve take, so it is never cut).
    """
    uri = _tracking_uri(tracking_uri, workdir)
    versions = registered_versions(uri)
    rows = [_model_row(version) for version in versions]
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
    else:
        console = Console(emoji=False, highlight=False, soft_wrap=True)
        print_unfolded(console, f"{'registered' if rows else 'no registered'} models in {uri}", hanging=2, markup=False)
        if rows:
            _print_models(rows, console)


def _model_row(version: Any) -> dict[str, Any]:
    tags = version.tags

    def number(key: str) -> float | None:
        try:
            return float(tags[key])
        except (KeyError, ValueError):
            return None

    epoch = number("selected_epoch")  # a metric copied to a tag, so '1.0'

    return {
        "name": version.name,
        "version": int(version.version),
        "aliases": list(getattr(version, "aliases", None) or []),
        "uri": f"models:/{version.name}/{version.version}",
        "run_id": version.run_id,
        "test_micro_f1": number("test_micro_f1"),
        "test_macro_f1": number("test_macro_f1"),
        "selected_epoch": int(epoch) if epoch is not None and epoch.is_integer() else None,
    }


def _print_models(rows: list[dict[str, Any]], console: Console) -> None:
    """A table when it fits the console with the names whole, else name lines with details under them."""

    def score(value: float | None) -> str:
        return "" if value is None else f"{value:.4f}"

    details = [
        (
            str(row["version"]), (row["run_id"] or "")[:8], score(row["test_micro_f1"]), score(row["test_macro_f1"]),
            str(row["selected_epoch"] or ""),
        )
        for row in rows
    ]
    table = Table(box=None, pad_edge=False)
    for column in ("model", "version", "run", "test micro F1", "test macro F1", "epoch"):
        table.add_column(column, no_wrap=True)
    for row, cells in zip(rows, details):
        table.add_row(row["name"], *cells)
    if console.measure(table, options=console.options.update(max_width=10_000)).maximum <= console.width:
        console.print(table)
        return
    for row, (version, run, micro, macro, epoch) in zip(rows, details):
        typer.echo(row["name"])
        typer.echo(
            f"    version {version}  run {run}  test micro F1 {micro or '-'}  macro F1 {macro or '-'}  epoch {epoch or '-'}"
        )


def export(
    model: str = MODEL_ARGUMENT,
    out: Path = typer.Option(
        ..., "--out",
        help="Folder to write: new or empty (a symlink to an empty folder is followed); written whole or not at all.",
    ),
    tracking_uri: str | None = TRACKING_OPTION,
    workdir: Path = WORKDIR_OPTION,
) -> None:
    """Write MODEL as a folder to take elsewhere: Hugging Face format for softmax heads, else an MLflow model."""
    from nerplat.serving.export import export_model  # lazy: torch, loaded after the output folder is checked

    check_output_folder(out)
    opened = _open(model, tracking_uri, workdir)
    kind = export_model(opened.bundle, opened.folder, out, model)
    size = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    typer.echo(f"wrote {kind} folder {out} ({size / 1e6:.1f} MB); {out / 'README.md'} says how to load it")


def predict(
    model: str = MODEL_ARGUMENT,
    input_file: Path | None = typer.Argument(
        None, help="Sentences to tag: plain text (one per line), CoNLL or JSONL (see --format)."
    ),
    text: str | None = typer.Option(
        None, "--text",
        help="Tag this sentence instead of a file: a table in a terminal, a JSON record with --json or when piped. An "
        "empty or blank text has no words: its record has empty words, tags and spans, as serve answers.",
    ),
    input_format: str | None = typer.Option(
        None, "--format",
        help="text, conll or jsonl; default: conll when every line ends in a tag (TOKEN<TAB>TAG), else from the suffix.",
    ),
    words: str = typer.Option(
        "encoder", "--words",
        help="How text is split into words: encoder (the model tokenizer's pre-tokenizer) or whitespace.",
    ),
    spans: str = typer.Option(
        "strict", "--spans",
        help="How tags make spans: strict (IOB2, as evaluate and the reports score them: an I- tag after O or another "
        "type is in no span) or lenient (conlleval's reading: it opens a span).",
    ),
    output: Path | None = typer.Option(
        None,
        "--output",
        "-o",
        help="Write here instead of standard output. A file is replaced whole once tagging is done (through a symlink, its "
        "target); a FIFO or character device (/dev/stdout, /dev/null) is written in place; a folder, dangling symlink, "
        "block device or socket is refused.",
    ),
    output_format: str = typer.Option("jsonl", "--output-format", help="jsonl (spans with scores) or conll (WORD TAG [SCORE])."),
    as_json: bool = typer.Option(False, "--json", help="With --text: print the JSON record even in a terminal."),
    batch_size: int = BATCH_OPTION,
    tracking_uri: str | None = TRACKING_OPTION,
    workdir: Path = WORKDIR_OPTION,
) -> None:
    """Tag sentences with MODEL, windowed and decoded exactly as in training; prints sentences/s."""
    _check_predict_options(input_file, text, words, spans, output_format)
    if output is not None:
        check_output_file(output)  # before the model loads and the tagging runs
    rows = [{"text": text}] if text is not None else read_rows(input_file, choose_format(input_file, input_format))
    bundle = _open(model, tracking_uri, workdir).bundle
    records, seconds = _predict_with_progress(bundle, rows, words, batch_size, spans, show=input_file is not None)
    if output is not None:
        write_output_file(output, lambda stream: write_records(records, output_format, stream))
    elif text is not None and output_format == "jsonl" and not as_json and sys.stdout.isatty():
        _print_record(records[0], Console(emoji=False, highlight=False, markup=False))
    else:
        write_records(records, output_format, sys.stdout)
    count = f"{len(rows)} sentence{'s' if len(rows) != 1 else ''}"
    typer.echo(f"tagged {count} in {seconds:.2f} s ({len(rows) / seconds:.1f} sentences/s)", err=True)


def _check_predict_options(input_file: Path | None, text: str | None, words: str, spans: str, output_format: str) -> None:
    """Refuses predict's bad options before the model loads: one input, known choices, UTF-8 text."""
    if (text is None) == (input_file is None):
        raise UserInputError(Problem("give either --text or an input file, not both and not neither", path="INPUT_FILE"))
    if words not in WORD_SPLITTERS:
        raise UserInputError(Problem(f"--words {words!r}: choose one of {', '.join(WORD_SPLITTERS)}", path="--words"))
    if spans not in SPAN_RULES:
        raise UserInputError(Problem(f"--spans {spans!r}: choose one of {', '.join(SPAN_RULES)}", path="--spans"))
    if output_format not in OUTPUT_FORMATS:
        raise UserInputError(
            Problem(f"--output-format {output_format!r}: choose one of {', '.join(OUTPUT_FORMATS)}", path="--output-format")
        )
    if text is not None:
        _check_utf8(text)


def _check_utf8(text: str) -> None:
    """Refuses a --text whose bytes are not UTF-8: Python hands them over as lone surrogates
    (U+DC80-U+DCFF for the bytes 0x80-0xFF), which are no characters a tagger can read."""
    position = next((i for i, c in enumerate(text) if "\ud800" <= c <= "\udfff"), None)
    if position is None:
        return
    code = ord(text[position])
    byte = f"byte 0x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"U+{code:04X}"
    raise UserInputError(Problem(
        f"the text is not UTF-8 ({byte} at character {position + 1}): pass UTF-8 text, e.g. convert it with "
        "iconv -f latin1 -t utf-8", path="--text",
    ))  # fmt: skip


def _print_record(record: dict[str, Any], console: Console) -> None:
    """One tagged sentence for a reader: its spans, then each word with its tag and score."""
    if record["spans"]:
        found = Table(box=None, pad_edge=False, title="spans", title_justify="left")
        for column in ("text", "type", "words", "score"):
            found.add_column(column, no_wrap=column != "text")
        for span in record["spans"]:
            score = "" if span.get("score") is None else f"{span['score']:.2f}"
            found.add_row(span["text"], span["type"], f"{span['start']}-{span['end']}", score)
        console.print(found)
    else:
        console.print(f"no entities in {len(record['words'])} words")
    tagged = Table(box=None, pad_edge=False)
    for column in ("word", "tag", "score"):
        tagged.add_column(column)
    scores = record.get("scores") or [None] * len(record["words"])
    for word, tag, score in zip(record["words"], record["tags"], scores):
        tagged.add_row(word, tag, "" if score is None else f"{score:.2f}")
    if record["words"]:
        console.print(tagged)


def _predict_with_progress(
    bundle, rows: list[dict], words: str, batch_size: int, span_rule: str, show: bool
) -> tuple[list[dict], float]:
    """Records of all rows, tagged in chunks so a progress bar can follow; and the seconds tagging took."""
    from nerplat.serving.records import predict_records  # lazy: torch, which `--help` and bad input never need

    chunk = batch_size * 8
    columns = (TextColumn("tagging"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    records: list[dict] = []
    started = time.perf_counter()
    with Progress(*columns, console=Console(emoji=False, stderr=True), transient=True, disable=not show) as bar:
        task = bar.add_task("tagging", total=len(rows))
        for first in range(0, len(rows), chunk):
            records += predict_records(bundle, rows[first : first + chunk], words, batch_size, span_rule=span_rule)
            bar.advance(task, len(rows[first : first + chunk]))
    return records, time.perf_counter() - started


def evaluate(
    model: str = MODEL_ARGUMENT,
    gold_file: Path = typer.Argument(
        ..., help="Sentences with gold tags: CoNLL (TOKEN TAG lines) or JSONL (tokens with tags or spans, or text with spans)."
    ),
    gold_format: str | None = typer.Option(
        None, "--format",
        help="conll, jsonl_tokens or jsonl_text (a corpus format); default: conll, or for .jsonl files the one whose key "
        "the first record has.",
    ),
    as_json: bool = typer.Option(
        False, "--json",
        help="Print {model, file, sentences, seconds, metrics} as JSON (metrics named as in MLflow, without the split prefix).",
    ),
    batch_size: int = BATCH_OPTION,
    tracking_uri: str | None = TRACKING_OPTION,
    workdir: Path = WORKDIR_OPTION,
) -> None:
    """Score MODEL on a file with gold tags: strict span precision, recall and F1, micro, macro and per
    type, as the reports give them."""
    from nerplat.serving.predictor import tag_sentences  # lazy: torch, loaded after the gold file is read

    sentences = read_gold(gold_file, gold_format)
    bundle = _open(model, tracking_uri, workdir).bundle
    started = time.perf_counter()
    tagged = tag_sentences(bundle, [s.tokens for s in sentences], batch_size)
    seconds = time.perf_counter() - started
    metrics = evaluate_tags([list(s.tags) for s in sentences], [t.tags for t in tagged])
    _warn_disjoint_types(bundle.labels, [tag for s in sentences for tag in s.tags])
    if as_json:
        scored = {
            "model": model, "file": str(gold_file), "sentences": len(sentences), "seconds": round(seconds, 3), "metrics": metrics,
        }  # fmt: skip
        typer.echo(json.dumps(scored, indent=2))
        return
    _print_scores(model, gold_file, len(sentences), metrics)
    typer.echo(f"tagged {len(sentences)} sentences in {seconds:.2f} s", err=True)


def _warn_disjoint_types(labels: list[str], gold_tags: list[str]) -> None:
    """A model trained on other entity types than the gold's (an untyped ENT model on typed gold)
    scores F1 0 with nothing wrong in the file: say so rather than let the zeros speak."""
    from rich.markup import escape

    model_types = sorted({t for t in map(entity_type, labels) if t is not None})
    gold_types = sorted({t for t in map(entity_type, gold_tags) if t is not None})
    if model_types and gold_types and not set(model_types) & set(gold_types):
        print_message(
            message_console(stderr=True),
            f"[yellow]warning:[/] the model's entity types ({escape(', '.join(model_types))}) and the gold's "
            f"({escape(', '.join(gold_types))}) do not overlap: no predicted span can match a gold span, so span F1 is 0. "
            "Evaluate on gold tagged with the model's types, or a model trained on the gold's.",
        )


def _print_scores(model: str, gold_file: Path, sentences: int, metrics: dict[str, float]) -> None:
    """Micro, macro, then one row per entity type, as in the reports (strict IOB2 spans)."""
    typer.echo(f"{model} on {gold_file} ({sentences} sentences; strict IOB2 span matching)")
    table = Table(box=None, pad_edge=False)
    for column in ("", "precision", "recall", "F1", "support"):
        table.add_column(column, justify="left" if not column else "right", no_wrap=True)
    types = sorted(key[len("type_") : -len("_f1")] for key in metrics if key.startswith("type_") and key.endswith("_f1"))
    support = sum(int(metrics[f"type_{t}_support"]) for t in types)
    by_type = [(t, f"type_{t}_", int(metrics[f"type_{t}_support"])) for t in types]
    for name, prefix, count in [("micro", "micro_", support), ("macro", "macro_", support), *by_type]:
        table.add_row(name, *(f"{metrics.get(prefix + m, 0.0):.4f}" for m in ("precision", "recall", "f1")), str(count))
    Console(emoji=False, highlight=False).print(table)
    typer.echo(
        f"token macro F1 {metrics['token_macro_f1']:.4f}  word accuracy {metrics['word_accuracy']:.4f}  "
        f"sentence accuracy {metrics['sentence_accuracy']:.4f}"
    )


def serve(
    model: str = MODEL_ARGUMENT,
    port: int = typer.Option(5001, "--port", min=1, max=65535, help="Port to listen on."),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to bind (loopback by default)."),
    max_request_bytes: int = typer.Option(
        1_000_000, "--max-request-bytes", min=1, help="Larger request bodies are refused (HTTP 413) unread."
    ),
    timeout: float = typer.Option(
        60.0, "--timeout", min=0.1, help="Seconds a request may take, waiting included; its tagging is then stopped (HTTP 504)."
    ),
    max_waiting: int = typer.Option(
        8, "--max-waiting", min=1, help="Requests queued or running at once; more are answered HTTP 503."
    ),
    tracking_uri: str | None = TRACKING_OPTION,
    workdir: Path = WORKDIR_OPTION,
) -> None:
    """Serve MODEL over HTTP in this process, on MLflow's scoring protocol (POST /invocations, GET /ping),
    until Ctrl-C or SIGTERM.

    Body: {"dataframe_records": [{"text": "a sentence"} or {"tokens": [...]}, ...]} (also dataframe_split,
    inputs, instances); answer: {"predictions": [...]}, one record per row as `nerplat predict` writes it.
    A row whose text is empty or blank has no words: its record has empty words, tags and spans, as
    `nerplat predict --text ""` prints. A request without rows, with an unknown field or a malformed row
    (a lone surrogate included) gets HTTP 400 naming the expected schema; unknown paths 404 and wrong
    methods 405, as JSON; tagging whose client disconnected is stopped. Nothing else is started: the
    server ends with this process.
    """
    # lazy: torch, which `--help` never needs
    from nerplat.serving.http_server import ServingLimits, check_address, serve_forever, tagging_app
    from nerplat.serving.records import predict_records

    check_address(host, port)
    bundle = _open(model, tracking_uri, workdir).bundle
    limits = ServingLimits(max_request_bytes=max_request_bytes, timeout=timeout, max_waiting=max_waiting)
    app = tagging_app(lambda rows, stop: predict_records(bundle, rows, stop=stop), limits, package_version())
    typer.echo(f"serving {model} on http://{host}:{port}/invocations (POST JSON; GET /ping); Ctrl-C stops it", err=True)
    serve_forever(app, host, port, quiet=Verbosity.quiet())

