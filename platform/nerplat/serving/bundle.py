"""A trained tagger as a folder of weights, tokenizer and decoding settings: what a model is made of.

Weights only (the tagger's state dict in safetensors): no optimiser or objective state, which made a
MiniLM trial checkpoint about 270 MB. The folder is the artifact of the MLflow model
(`nerplat.serving.pyfunc`) and what `nerplat train --save` writes:

    tagger.json          labels (O first), head (name, params), encoder (name, max_length, window_stride)
    encoder/config.json  the transformers config the encoder is rebuilt from (no weights downloaded),
                         or encoder/word_embeddings.json: the table's shape, for a word-embedding encoder
    tokenizer/           the encoder's fast tokenizer (a word-level one for word embeddings)
    weights.safetensors  encoder, head (CRF transitions, two-task thresholds included)
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nerplat.errors import Problem, UserInputError
from nerplat.serving.files import check_writable_folder, write_failure
from nerplat.models.encoder_registry import Encoder
from nerplat.models.encoders import quiet_transformers, tagging_encoder
from nerplat.models.tagger import Tagger, build_tagger
from nerplat.models.word_embeddings import WordEmbeddings
from nerplat.config.trial import Component, EncoderSettings

FORMAT_VERSION = 1
SETTINGS_FILE = "tagger.json"
WEIGHTS_FILE = "weights.safetensors"
WORD_EMBEDDINGS_FILE = "word_embeddings.json"
MLFLOW_ARTIFACT = "tagger"  # the folder's artifact key in the MLflow pyfunc model (`nerplat.serving.pyfunc`)


@dataclass(frozen=True)
class TaggerBundle:
    """A tagger ready to predict, with what decoding and windowing need."""

    tagger: Tagger
    tokenizer: Any
    labels: list[str]
    head: Component
    encoder: EncoderSettings


def check_bundle_target(directory: Path, flag: str) -> None:
    """Refuses, before the training whose model `save_bundle` will write there, a folder it could not
    write or must not replace: one holding anything but an earlier model (which it replaces whole)."""
    check_writable_folder(directory, flag)
    if directory.is_dir() and any(directory.iterdir()) and not (directory / SETTINGS_FILE).is_file():
        raise UserInputError(Problem(
            f"{flag} {directory} holds files but no model ({SETTINGS_FILE}): a model replaces the whole folder, so name "
            "a new or empty folder, or an earlier model's",
            path=flag,
        ))


def save_bundle(
    directory: Path, tagger: Tagger, tokenizer: Any, labels: list[str], head: Component, encoder: EncoderSettings
) -> Path:
    """Writes the folder atomically (a temporary sibling, then a rename); returns `directory`. A write
    the machine refuses (full disk, `ulimit -f`) is a StorageError naming the cause."""
    from safetensors.torch import save_model

    directory = Path(directory)
    directory.parent.mkdir(parents=True, exist_ok=True)
    temporary = Path(tempfile.mkdtemp(dir=directory.parent, prefix=f".{directory.name}."))
    temporary.chmod(0o755)  # mkdtemp makes it private; the folder is meant to be handed over
    try:
        settings = {
            "format": FORMAT_VERSION,
            "labels": list(labels),
            "head": head.model_dump(mode="json"),
            "encoder": encoder.model_dump(mode="json"),
        }
        (temporary / SETTINGS_FILE).write_text(json.dumps(settings, indent=2) + "\n")
        _save_encoder_shape(tagger.encoder, temporary / "encoder")
        tokenizer.save_pretrained(temporary / "tokenizer")
        save_model(tagger, str(temporary / WEIGHTS_FILE))
        if directory.exists():
            shutil.rmtree(directory)
        os.replace(temporary, directory)
    except BaseException as error:
        shutil.rmtree(temporary, ignore_errors=True)
        failure = write_failure(directory, error, "nothing was left behind") if isinstance(error, Exception) else None
        if failure is None:
            raise
        raise failure from None
    return directory


def load_bundle(directory: Path) -> TaggerBundle:
    """The tagger a folder written by `save_bundle` holds, in eval mode on the CPU."""
    import transformers
    from safetensors import SafetensorError
    from safetensors.torch import load_model

    directory = Path(directory)
    settings_file = directory / SETTINGS_FILE
    if not settings_file.is_file():
        raise UserInputError(f"{directory} is not a nerplat model folder: it has no {SETTINGS_FILE}")
    labels, head, encoder_settings = _read_settings(settings_file)
    with quiet_transformers():
        tokenizer = transformers.AutoTokenizer.from_pretrained(directory / "tokenizer")
    model, hidden_size = _empty_encoder(directory / "encoder")
    encoder = Encoder(name=encoder_settings.name, tokenizer=tokenizer, model=model, hidden_size=hidden_size)
    tagger = build_tagger(encoder, head, labels)
    try:
        load_model(tagger, str(directory / WEIGHTS_FILE))
    except (SafetensorError, RuntimeError, OSError) as error:  # truncated, another model's, unreadable
        reason = str(error).strip().splitlines()[0][:200] if str(error).strip() else type(error).__name__
        raise UserInputError(Problem(
            f"cannot load the tagger's weights ({reason}): {_WRITE_AGAIN}", str(directory / WEIGHTS_FILE)
        )) from None
    tagger.eval()
    return TaggerBundle(tagger, tokenizer, labels, head, encoder_settings)


_WRITE_AGAIN = (
    "the model folder is damaged; write it again (`nerplat train --save`, `nerplat export`) or fetch it from MLflow again"
)


def _read_settings(settings_file: Path) -> tuple[list[str], Component, EncoderSettings]:
    """A bundle's labels, head and encoder settings, or a UserInputError naming the file."""
    from pydantic import ValidationError

    try:
        settings = json.loads(settings_file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise UserInputError(Problem(f"not readable as JSON ({error}): {_WRITE_AGAIN}", str(settings_file))) from None
    if not isinstance(settings, dict):
        raise UserInputError(Problem(
            f"expected a JSON object with format, labels, head and encoder: {_WRITE_AGAIN}", str(settings_file)
        ))
    if settings.get("format") != FORMAT_VERSION:
        raise UserInputError(f"{settings_file}: format {settings.get('format')!r}, this nerplat reads format {FORMAT_VERSION}")
    labels = settings.get("labels")
    if not isinstance(labels, list) or not labels or not all(isinstance(label, str) for label in labels):
        raise UserInputError(Problem(f"'labels' must be a non-empty list of tags, O first: {_WRITE_AGAIN}", str(settings_file)))
    try:
        return labels, Component.model_validate(settings.get("head")), EncoderSettings.model_validate(settings.get("encoder"))
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise UserInputError(Problem(
            f"'head' or 'encoder' is invalid ({where}: {first['msg']}): {_WRITE_AGAIN}", str(settings_file)
        )) from None


def _save_encoder_shape(model: Any, directory: Path) -> None:
    """What `_empty_encoder` rebuilds the encoder from before the weights are loaded into it."""
    if isinstance(model, WordEmbeddings):
        directory.mkdir()
        (directory / WORD_EMBEDDINGS_FILE).write_text(json.dumps(model.shape()) + "\n")
    else:
        model.config.save_pretrained(directory)


def _empty_encoder(directory: Path) -> tuple[Any, int]:
    """(encoder module with placeholder weights, hidden size) from what `_save_encoder_shape` wrote."""
    import transformers

    shape_file = directory / WORD_EMBEDDINGS_FILE
    if shape_file.is_file():
        shape = json.loads(shape_file.read_text())
        return WordEmbeddings.empty(shape), shape["dimensions"]
    with quiet_transformers():
        config = transformers.AutoConfig.from_pretrained(directory)
        return tagging_encoder(transformers.AutoModel.from_config(config)), config.hidden_size
