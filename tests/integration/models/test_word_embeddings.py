"""The static MiniLM word vectors, for real: they read MiniLM-L6's pretrained input embeddings (slow on a
small CPU), so they are slow tests; the other word-embedding encoders are tested in tests/unit/models."""

import numpy as np
import pytest

from nerplat.data.corpus import Sentence
from nerplat.models import word_embeddings
from nerplat.models.word_embeddings import StaticMiniLMConfig, WordEmbeddingRecipe

pytestmark = pytest.mark.slow

TRAIN = [
    Sentence(("The", "cat", "sat", "in", "Paris"), ("O", "O", "O", "O", "B-LOC")), Sentence(("A", "dog", "ran"), ("O", "O", "O"))
]


@pytest.fixture(scope="module")
def static():
    recipe = WordEmbeddingRecipe(StaticMiniLMConfig())
    return recipe.fit("minilm-static-50", TRAIN + [Sentence(("Zyxwvut", "London"), ("B-LOC", "B-LOC"))], 0)


def vector(enc, word):
    (ids,) = enc.tokenizer([[word]], is_split_into_words=True, add_special_tokens=False)["input_ids"]
    return enc.model.embedding.weight[ids[0]].detach().numpy()


def cosine(a, b):
    return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))


def test_static_minilm_vectors_reach_words_the_training_split_never_had(static):
    assert [p.requires_grad for p in static.model.parameters()] == [False] and static.hidden_size == 50
    assert not np.all(vector(static, "berlin") == 0)  # a MiniLM whole word, not a training word
    assert not np.all(vector(static, "zyxwvut") == 0)  # a training word MiniLM splits into pieces
    assert np.all(vector(static, "qqxjvbz") == 0)  # in neither: [UNK], zero
    assert len(static.tokenizer) > 20_000
    table = static.model.embedding.weight[2:]  # past [PAD] and [UNK]
    assert float(table.pow(2).mean().sqrt()) == pytest.approx(1.0, rel=1e-3)  # GloVe's scale, not MiniLM's 0.1


def test_static_minilm_vectors_keep_the_pretrained_neighbourhoods(static):
    paris, london, banana = (vector(static, w) for w in ("paris", "london", "banana"))
    assert cosine(paris, london) > 0.4 > cosine(paris, banana)


def test_minilm_words_are_read_once_per_process_and_only_training_words_are_averaged(static, monkeypatch):
    averaged = []
    piece_means = word_embeddings._piece_means
    monkeypatch.setattr(word_embeddings, "_piece_means", lambda words: averaged.append(list(words)) or piece_means(words))
    WordEmbeddingRecipe(StaticMiniLMConfig()).fit("minilm-static-50", TRAIN + [Sentence(("Qqxjvbz",), ("O",))], 0)
    assert averaged == [["qqxjvbz"]]  # the training word MiniLM lacks; its whole words come from the process cache
