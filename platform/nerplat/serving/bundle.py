"""A trained tagger as a folder of weights, tokenizer and decoding settings: what a model is made of.

Weights only (the tagger's state dict in safetensors): no optimiser or objective state, which made a
MiniLM trial checkpoint about 270 MB. The folder is the artifact of the MLflow model
(`nerplat.serving.pyfunc`) and what `nerplat train --save` writes:

    tagger.json          labels (O first), head (name, params), encoder (name, max_length, window_stride)
    encoder/config.json  the transformers config the encoder is rebuilt from (no weights downloaded)
    tokenizer/           the encoder's fast tokenizer
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

from nerplat.errors import UserInputError
from nerplat.models.encoders import Encoder, quiet_transformers, tagging_encoder
from nerplat.models.tagger import Tagger, build_tagger
from nerplat.config.trial import Component, EncoderSettings

FORMAT_VERSION = 1
SETTINGS_FILE = "tagger.json"
WEIGHTS_FILE = "weights.safetensors"


@dataclass(frozen=True)
class TaggerBundle:
    """A tagger ready to predict, with what decoding and windowing need."""

    tagger: Tagger
    tokenizer: Any
    labels: list[str]
    head: Component
    encoder: EncoderSettings


def save_bundle(directory: Path, tagger: Tagger, tokenizer: Any, labels: list[str], head: Component, encoder: EncoderSettings) -> Path:
    """Writes the folder atomically (a temporary sibling, then a rename); returns `directory`."""
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
        tagger.encoder.config.save_pretrained(temporary / "encoder")
        tokenizer.save_pretrained(temporary / "tokenizer")
        save_model(tagger, str(temporary / WEIGHTS_FILE))
        if directory.exists():
            shutil.rmtree(directory)
        os.replace(temporary, directory)
    except BaseException:
        shutil.rmtree(temporary, ignore_errors=True)
        raise
    return directory


def load_bundle(directory: Path) -> TaggerBundle:
    """The tagger a folder written by `save_bundle` holds, in eval mode on the CPU."""
    import transformers
    from safetensors.torch import load_model

    directory = Path(directory)
    settings_file = directory / SETTINGS_FILE
    if not settings_file.is_file():
        raise UserInputError(f"{directory} is not a nerplat model folder: it has no {SETTINGS_FILE}")
    settings = json.loads(settings_file.read_text())
    if settings.get("format") != FORMAT_VERSION:
        raise UserInputError(f"{settings_file}: format {settings.get('format')!r}, this nerplat reads format {FORMAT_VERSION}")
    with quiet_transformers():
        tokenizer = transformers.AutoTokenizer.from_pretrained(directory / "tokenizer")
        config = transformers.AutoConfig.from_pretrained(directory / "encoder")
        model = tagging_encoder(transformers.AutoModel.from_config(config))
    labels, head = settings["labels"], Component.model_validate(settings["head"])
    encoder = Encoder(name=settings["encoder"]["name"], tokenizer=tokenizer, model=model, hidden_size=config.hidden_size)
    tagger = build_tagger(encoder, head, labels)
    load_model(tagger, str(directory / WEIGHTS_FILE))
    tagger.eval()
    return TaggerBundle(tagger, tokenizer, labels, head, EncoderSettings.model_validate(settings["encoder"]))
