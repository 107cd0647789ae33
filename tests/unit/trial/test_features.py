import random

import numpy as np
import pytest

from nerplat.config.trial import EncoderSettings
from nerplat.data.corpus import Corpus, Sentence
from nerplat.errors import UserInputError
from nerplat.models.encoder_registry import ENCODERS
from nerplat.trial import features as features_module
from nerplat.trial.features import featurize, featurize_corpus, plan_windows

LABELS = ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]
LONG_WORD = "supercalifragilisticexpialidocious"  # 11 MiniLM sub-tokens


@pytest.fixture(scope="module")
def tokenizer():
    return ENCODERS.get("tiny").factory(None)[0]


def sentence(text: str, tags: str) -> Sentence:
    return Sentence(tuple(text.split(" ")), tuple(tags.split()))


SHORT = sentence("John lives in New York", "B-PER O O B-LOC I-LOC")
LONG = Sentence(
    tuple(f"w{i}" if i % 7 else "Washington" for i in range(60)),
    tuple("B-LOC" if i % 7 == 0 else "O" for i in range(60)),
)


def settings(max_length: int = 128, stride: int = 32) -> EncoderSettings:
    return EncoderSettings(name="tiny", max_length=max_length, window_stride=stride)


def owned_words(f) -> list[tuple[int, int]]:
    pairs = []
    for i in range(len(f)):
        w = f.window(i)
        pairs.extend((w.sentence, int(word)) for word in w.word_index)
    return pairs


def test_short_sentence_is_one_window_labelled_on_first_sub_tokens(tokenizer, tmp_path):
    words = sentence(f"{LONG_WORD} Johannesburg", "O B-LOC")
    f = featurize([words], tokenizer, settings(), LABELS, cache_dir=tmp_path)
    assert len(f) == 1
    window = f.window(0)
    expected = tokenizer([list(words.tokens)], is_split_into_words=True)
    assert window.input_ids.tolist() == expected["input_ids"][0]
    word_ids = expected.word_ids(0)
    assert window.word_starts.tolist() == [word_ids.index(0), word_ids.index(1)]
    assert window.word_starts[1] - window.word_starts[0] > 1  # the long word has several sub-tokens
    assert window.labels.tolist() == [0, 1]
    assert window.word_index.tolist() == [0, 1]


@pytest.mark.parametrize("max_length,stride", [(16, 0), (16, 4), (20, 8), (32, 16)])
def test_long_sentences_are_windowed_and_every_word_is_owned_once(tokenizer, tmp_path, max_length, stride):
    sentences = [SHORT, LONG, SHORT]
    f = featurize(sentences, tokenizer, settings(max_length, stride), LABELS, cache_dir=tmp_path)
    assert f.token_counts().max() <= max_length
    assert (f.sentence == 1).sum() > 1
    pairs = owned_words(f)
    assert sorted(pairs) == [(s, w) for s, x in enumerate(sentences) for w in range(len(x))]
    for i in range(len(f)):
        w = f.window(i)
        assert w.input_ids[0] == tokenizer.cls_token_id and w.input_ids[-1] == tokenizer.sep_token_id
        gold = sentences[w.sentence].tags
        assert [LABELS[label] for label in w.labels] == [gold[word] for word in w.word_index]
        # the labelled sub-token is the word's first: "Washington" is one token, "w1" starts with "w"
        first_pieces = [tokenizer.convert_ids_to_tokens(int(w.input_ids[s])) for s in w.word_starts]
        words = [sentences[w.sentence].tokens[word].lower() for word in w.word_index]
        assert all(word.startswith(piece) for piece, word in zip(first_pieces, words))


def test_windows_overlap_so_owned_words_have_context_on_both_sides(tokenizer, tmp_path):
    f = featurize([LONG], tokenizer, settings(24, 8), LABELS, cache_dir=tmp_path)
    inner = [f.window(i) for i in range(1, len(f) - 1)]
    assert inner, "expected several windows"
    for w in inner:  # not the first or last window: it neither starts nor ends with an owned word
        assert w.word_starts.min() > 1 and w.word_starts.max() < len(w.input_ids) - 2


def test_a_word_longer_than_the_window_keeps_its_first_sub_tokens(tokenizer, tmp_path):
    huge = LONG_WORD * 2  # about 22 sub-tokens, more than the 14 a 16-token window holds
    words = sentence(f"a {huge} b", "O B-PER O")
    f = featurize([words], tokenizer, settings(max_length=16, stride=2), LABELS, cache_dir=tmp_path)
    assert sorted(owned_words(f)) == [(0, 0), (0, 1), (0, 2)]
    long_window = next(f.window(i) for i in range(len(f)) if 1 in f.window(i).word_index)
    pieces = tokenizer([[huge]], is_split_into_words=True, add_special_tokens=False)["input_ids"][0]
    assert len(pieces) > 14 and len(long_window.input_ids) == 16
    assert long_window.input_ids[1:-1].tolist() == pieces[:14]
    assert long_window.labels.tolist() == [3]


def test_words_the_tokenizer_drops_become_unknown_tokens(tokenizer, tmp_path):
    words = Sentence(("a", "\u200b", "b"), ("O", "B-PER", "O"))
    window = featurize([words], tokenizer, settings(), LABELS, cache_dir=tmp_path).window(0)
    assert window.input_ids[window.word_starts[1]] == tokenizer.unk_token_id
    assert window.labels.tolist() == [0, 3, 0]


def test_second_call_reads_the_cache_and_other_settings_do_not(tokenizer, tmp_path, monkeypatch):
    first = featurize([SHORT, LONG], tokenizer, settings(24, 8), LABELS, cache_dir=tmp_path)
    assert len(list((tmp_path / "features").glob("*.npz"))) == 1

    def no_tokenising(*args, **kwargs):
        raise AssertionError("tokenised again")

    monkeypatch.setattr(features_module, "tokenize_sentences", no_tokenising)
    again = featurize([SHORT, LONG], tokenizer, settings(24, 8), LABELS, cache_dir=tmp_path)
    for name in ("input_ids", "token_offsets", "word_starts", "word_index", "labels", "sentence"):
        assert np.array_equal(getattr(first, name), getattr(again, name))
    for other in [
        lambda: featurize([SHORT, LONG], tokenizer, settings(24, 4), LABELS, cache_dir=tmp_path),
        lambda: featurize([SHORT, LONG], tokenizer, settings(32, 8), LABELS, cache_dir=tmp_path),
        lambda: featurize([LONG, SHORT], tokenizer, settings(24, 8), LABELS, cache_dir=tmp_path),
        lambda: featurize([SHORT, LONG], tokenizer, settings(24, 8), LABELS[::-1], cache_dir=tmp_path),
    ]:
        with pytest.raises(AssertionError, match="tokenised again"):
            other()


def test_default_cache_dir_is_nerplat_cache(tokenizer, tmp_path, monkeypatch):
    monkeypatch.setenv("NERPLAT_CACHE", str(tmp_path / "cache"))
    featurize([SHORT], tokenizer, settings(), LABELS)
    assert len(list((tmp_path / "cache" / "features").glob("*.npz"))) == 1


def test_a_corrupt_cache_file_is_tokenised_again(tokenizer, tmp_path):
    expected = featurize([SHORT], tokenizer, settings(), LABELS, cache_dir=tmp_path)
    (path,) = (tmp_path / "features").glob("*.npz")
    path.write_bytes(b"not a zip file")
    again = featurize([SHORT], tokenizer, settings(), LABELS, cache_dir=tmp_path)
    assert np.array_equal(again.input_ids, expected.input_ids)
    assert list((tmp_path / "features").glob("*.tmp")) == []


def test_corpus_features_use_the_corpus_label_list(tokenizer, tmp_path):
    corpus = Corpus("toy", train=(SHORT,), dev=(SHORT,), test=None)
    splits = featurize_corpus(corpus, tokenizer, settings(), cache_dir=tmp_path)
    assert set(splits) == {"train", "dev"}
    assert splits["train"].window(0).labels.tolist() == [3, 0, 0, 1, 2]  # O, B-LOC, I-LOC, B-PER, I-PER


def test_a_stride_as_long_as_the_window_is_a_user_error(tokenizer, tmp_path):
    with pytest.raises(UserInputError, match="window_stride"):
        featurize([SHORT], tokenizer, settings(16, 14), LABELS, cache_dir=tmp_path)


def test_tags_outside_the_label_list_are_refused(tokenizer, tmp_path):
    with pytest.raises(ValueError, match="B-ORG"):
        featurize([sentence("x", "B-ORG")], tokenizer, settings(), LABELS, cache_dir=tmp_path)


def test_plan_windows_on_random_sentences():
    rng = random.Random(1)
    for _ in range(300):
        budget, stride = rng.randint(2, 12), 0
        stride = rng.randint(0, budget - 1)
        lengths = [rng.randint(1, budget) for _ in range(rng.randint(1, 30))]
        windows, owner = plan_windows(lengths, budget, stride)
        assert windows[0][0] == 0 and windows[-1][1] == len(lengths)
        for (first, end), (next_first, next_end) in zip(windows, windows[1:]):
            assert first < next_first <= end < next_end  # forward, contiguous, no gap
            assert sum(lengths[next_first:end]) <= stride  # overlap within the stride
        for first, end in windows:
            assert sum(lengths[first:end]) <= budget
        for word, w in enumerate(owner):
            assert windows[w][0] <= word < windows[w][1]


def test_plan_windows_gives_words_to_the_window_where_they_have_most_context():
    windows, owner = plan_windows([1] * 10, budget=6, stride=4)
    assert windows == [(0, 6), (2, 8), (4, 10)]
    # word 3 has context min(3, 2) = 2 in the first window and min(1, 4) = 1 in the second
    assert owner == [0, 0, 0, 0, 1, 1, 2, 2, 2, 2]
