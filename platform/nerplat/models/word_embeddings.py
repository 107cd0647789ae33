"""Word-embedding encoders (Wang & Wang 2022's shallow and Bi-LSTM models): one vector per word, no context.

Wang & Wang 2022 used 50-d pretrained GloVe/biomedical vectors, which cannot be fetched here. These entries make
50-d vectors offline, from a pretrained table that ships with the default encoder or from the run's
own training split (after its samplers, so augmentation's new words are in it), with the trial's seed:

- ``minilm-static-50``: pretrained static vectors, the nearest offline stand-in for GloVe: each word's
  vector is the mean of MiniLM-L6's input (word-piece) embeddings over the word's pieces, reduced to
  50 dimensions by PCA over the vocabulary and scaled to RMS 1 per entry (GloVe's scale; MiniLM's
  are ten times smaller, which left a frozen-input Bi-LSTM predicting only O); frozen, as Wang & Wang 2022 keep
  GloVe fixed. Like GloVe's, its vocabulary reaches beyond the training split: every whole-word entry
  of MiniLM's vocabulary (about 20,000 lowercase words) plus every training word, so most dev and
  test words have a vector. MiniLM's words are read once per process; a trial averages only its
  other training words and fits the PCA (under a second).

- ``word2vec-50``: gensim Word2Vec (skip-gram, window 5, 20 epochs, one worker so a seed gives the
  same vectors), frozen during tagging, as Wang & Wang 2022 keep their pretrained vectors fixed. Training is cached
  on disk like the token features (`$NERPLAT_CACHE/embeddings`), keyed by the training words, the
  settings and the seed.
- ``random-50``: uniform in +-sqrt(3/50) (variance 1/50), trained with the tagger.

Vocabulary and out-of-vocabulary words: words are lowercased (GloVe's vocabularies are lowercase);
the vocabulary is every lowercased training word seen at least ``min_count`` times, plus ``[PAD]``
(id 0) and ``[UNK]`` (id 1). Every other word, in training or at test time, is ``[UNK]``. For
``word2vec-50`` min_count is 1 and ``[UNK]`` is the zero vector (frozen: an unseen word carries no
evidence); ``minilm-static-50`` adds MiniLM's whole words to that vocabulary and its ``[UNK]`` is
zero too. For ``random-50`` min_count is 2, so training singletons are ``[UNK]`` and its vector is
learned for the unseen words of dev and test. The tokenizer is a fast (Rust) word-level tokenizer,
one sub-token per word, so windowing, batching and every head work unchanged.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, ClassVar, Literal, Sequence

import numpy as np
import torch
from pydantic import BaseModel, ConfigDict, Field
from torch import nn

from nerplat.data.corpus import Sentence
from nerplat.errors import UserInputError
from nerplat.models.encoder_registry import ENCODERS, Encoder
from nerplat.models.encoders import minilm_l6_directory, read_model, read_tokenizer
from nerplat.npz_cache import entry_path, read_arrays, write_arrays

PAD, UNK = "[PAD]", "[UNK]"
Method = Literal["word2vec", "random", "pretrained"]
CACHE_VERSION = 2  # bump when the training or the stored arrays change


class WordEmbeddingConfig(BaseModel):
    """Settings of a word-embedding encoder (fixed per registered name)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    method: ClassVar[Method]

    dimensions: int = Field(50, ge=1, description="Vector size (Wang & Wang 2022: 50).")
    min_count: int = Field(1, ge=1, description="Training occurrences a word needs to get its own vector.")
    trainable: bool = Field(False, description="Whether the tagger's optimiser updates the vectors.")


class Word2VecConfig(WordEmbeddingConfig):
    method: ClassVar[Method] = "word2vec"

    window: int = Field(5, ge=1, description="Context words on each side.")
    epochs: int = Field(20, ge=1, description="Passes of Word2Vec over the training split.")
    skip_gram: bool = Field(True, description="Skip-gram (better on small corpora) rather than CBOW.")


class RandomEmbeddingConfig(WordEmbeddingConfig):
    method: ClassVar[Method] = "random"

    min_count: int = Field(2, ge=1, description="Training singletons are [UNK], so its vector is learned.")
    trainable: bool = Field(True, description="Random vectors are only useful when trained.")


class StaticMiniLMConfig(WordEmbeddingConfig):
    method: ClassVar[Method] = "pretrained"


@dataclass(frozen=True)
class WordStates:
    last_hidden_state: torch.Tensor  # [batch, words, dimensions]: what the tagger reads from any encoder


class WordEmbeddings(nn.Module):
    """An embedding table behind the transformer encoders' call signature."""

    # One lookup a word and no attention: padding costs next to nothing, so the tagger encodes a
    # batch in one pass rather than in length pieces (`models.tagger.Tagger.word_states`).
    pads_for_free = True

    def __init__(self, vectors: torch.Tensor, trainable: bool):
        super().__init__()
        self.embedding = nn.Embedding.from_pretrained(vectors, freeze=not trainable, padding_idx=0)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> WordStates:
        return WordStates(self.embedding(input_ids))

    def shape(self) -> dict[str, Any]:
        """What `empty` needs to rebuild the table before its weights are loaded (a saved bundle)."""
        rows, dimensions = self.embedding.weight.shape
        return {"rows": rows, "dimensions": dimensions, "trainable": self.embedding.weight.requires_grad}

    @classmethod
    def empty(cls, shape: dict[str, Any]) -> "WordEmbeddings":
        return cls(torch.zeros(shape["rows"], shape["dimensions"]), shape["trainable"])


@dataclass(frozen=True)
class WordEmbeddingRecipe:
    """What a word-embedding entry returns: `load_encoder` fits it on the trial's training split."""

    config: WordEmbeddingConfig

    def fit(self, name: str, train: Sequence[Sentence], seed: int, cache_dir: Path | None = None) -> Encoder:
        tokenizer = word_tokenizer([])
        normalise = tokenizer.backend_tokenizer.normalizer.normalize_str
        sentences = [[normalise(token) for token in s.tokens] for s in train]
        counts = Counter(word for sentence in sentences for word in sentence)
        vocabulary = sorted((w for w, n in counts.items() if n >= self.config.min_count), key=lambda w: (-counts[w], w))
        if not vocabulary:
            raise UserInputError(
                f"encoder '{name}' found no training word seen {self.config.min_count} times or more: "
                "the training split is too small"
            )
        if self.config.method == "pretrained":
            vocabulary, vectors = _static_minilm(vocabulary, self.config.dimensions)
        elif self.config.method == "word2vec":
            vectors = _cached_word2vec(sentences, vocabulary, self.config, seed, cache_dir)
        else:
            vectors = _random_vectors(len(vocabulary), self.config.dimensions, seed)
        special = np.zeros((2, self.config.dimensions), dtype=np.float32)  # [PAD], [UNK]
        if self.config.trainable:
            special[1] = _random_vectors(1, self.config.dimensions, seed + 1)[0]
        table = torch.from_numpy(np.concatenate([special, vectors]).astype(np.float32))
        return Encoder(
            name=name,
            tokenizer=word_tokenizer(vocabulary),
            model=WordEmbeddings(table, self.config.trainable),
            hidden_size=self.config.dimensions,
        )


def word_tokenizer(vocabulary: Sequence[str]) -> Any:
    """A fast word-level tokenizer: lowercases, one id per word, `[PAD]` 0, `[UNK]` 1, no special tokens."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    ids = {PAD: 0, UNK: 1} | {word: i + 2 for i, word in enumerate(vocabulary)}
    backend = Tokenizer(models.WordLevel(ids, unk_token=UNK))
    backend.normalizer = normalizers.Lowercase()
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(tokenizer_object=backend, unk_token=UNK, pad_token=PAD)


def _random_vectors(rows: int, dimensions: int, seed: int) -> np.ndarray:
    bound = math.sqrt(3.0 / dimensions)
    return np.random.default_rng(seed).uniform(-bound, bound, size=(rows, dimensions)).astype(np.float32)


def _cached_word2vec(
    sentences: list[list[str]], vocabulary: list[str], config: Word2VecConfig, seed: int, cache_dir: Path | None
) -> np.ndarray:
    digest = hashlib.sha256(json.dumps(sentences, ensure_ascii=False).encode()).hexdigest()
    key_text = json.dumps(
        {"version": CACHE_VERSION, "config": config.model_dump(), "seed": seed, "sentences": digest}, sort_keys=True
    )
    path = entry_path(cache_dir, "embeddings", key_text)
    cached = read_arrays(path, key_text, ["vectors"])
    if cached is not None:
        return cached["vectors"]
    vectors = _train_word2vec(sentences, vocabulary, config, seed)
    write_arrays(path, key_text, {"vectors": vectors})
    return vectors


def _train_word2vec(sentences: list[list[str]], vocabulary: list[str], config: Word2VecConfig, seed: int) -> np.ndarray:
    """Vectors of `vocabulary`, in its order."""
    try:
        from gensim.models import Word2Vec
    except ImportError:
        raise UserInputError("encoder 'word2vec-50' needs gensim: pip install gensim") from None
    model = Word2Vec(
        sentences,
        vector_size=config.dimensions,
        window=config.window,
        min_count=config.min_count,
        sg=int(config.skip_gram),
        epochs=config.epochs,
        seed=seed,
        workers=1,  # more workers make the result depend on thread scheduling
    )
    return np.stack([model.wv[word] for word in vocabulary]).astype(np.float32)


@cache
def _minilm_whole_words() -> tuple[list[str], np.ndarray]:
    """MiniLM's whole lowercase words (no ## continuation, no [special]) and their input embeddings.

    Read once per process: every trial of a worker shares them, and only its training split's other
    words need their pieces averaged (`_piece_means`).
    """
    vocabulary = read_tokenizer(str(minilm_l6_directory())).get_vocab()
    words = sorted(w for w in vocabulary if w.isalpha() and not w.startswith("[") and not w.startswith("##"))
    return words, _piece_means(words)


def _piece_means(words: list[str]) -> np.ndarray:
    """Each word's mean MiniLM input embedding over its word pieces ([words, 384])."""
    directory = str(minilm_l6_directory())
    table = read_model(directory).embeddings.word_embeddings.weight.detach().numpy()
    if not words:
        return np.zeros((0, table.shape[1]), dtype=table.dtype)
    pieces = read_tokenizer(directory)(words, add_special_tokens=False)["input_ids"]
    return np.stack([table[ids].mean(axis=0) if ids else np.zeros(table.shape[1], dtype=table.dtype) for ids in pieces])


def _static_minilm(vocabulary: list[str], dimensions: int) -> tuple[list[str], np.ndarray]:
    """`vocabulary` followed by MiniLM's other whole words, and their vectors: piece means, PCA, RMS 1."""
    whole_words, whole_means = _minilm_whole_words()
    index = {word: i for i, word in enumerate(whole_words)}
    extra = [w for w in vocabulary if w not in index]
    extra_means = dict(zip(extra, _piece_means(extra)))
    seen = set(vocabulary)
    words = vocabulary + [w for w in whole_words if w not in seen]
    means = np.stack([extra_means[w] if w in extra_means else whole_means[index[w]] for w in words])
    centred = means - means.mean(axis=0)
    _, _, components = np.linalg.svd(centred, full_matrices=False)
    projected = centred @ components[:dimensions].T
    # MiniLM's input embeddings are small (per-entry RMS about 0.1 after PCA): scaled to RMS 1, like
    # GloVe's scale, so the frozen inputs do not shrink the first layer's gradients tenfold
    return words, (projected / np.sqrt(np.mean(projected**2))).astype(np.float32)


@ENCODERS.register("minilm-static-50", StaticMiniLMConfig)
def minilm_static_50(config: StaticMiniLMConfig) -> WordEmbeddingRecipe:
    """50-d pretrained static vectors from MiniLM-L6's input embeddings (PCA), frozen; MiniLM's whole
    words plus the training words."""
    return WordEmbeddingRecipe(config)


@ENCODERS.register("word2vec-50", Word2VecConfig)
def word2vec_50(config: Word2VecConfig) -> WordEmbeddingRecipe:
    """50-d Word2Vec vectors trained on the run's training split (seeded, cached), frozen; lowercased words."""
    return WordEmbeddingRecipe(config)


@ENCODERS.register("random-50", RandomEmbeddingConfig)
def random_50(config: RandomEmbeddingConfig) -> WordEmbeddingRecipe:
    """50-d randomly initialised word vectors over the training vocabulary, trained with the tagger."""
    return WordEmbeddingRecipe(config)
