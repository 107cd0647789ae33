import copy

import pytest
import torch

from nerplat.config.trial import EncoderSettings
from nerplat.errors import UserInputError
from nerplat.models import encoders
from nerplat.models.encoder_registry import ENCODERS
from nerplat.models.encoders import load_encoder


def test_registered_encoders():
    assert {"minilm-l6", "tiny"} <= set(ENCODERS.names())


def test_tiny_is_a_small_seeded_bert_with_the_minilm_tokenizer():
    torch.manual_seed(123)  # the global seed must not matter
    first = load_encoder(EncoderSettings(name="tiny"))
    torch.manual_seed(456)
    second = load_encoder(EncoderSettings(name="tiny"))
    assert first.hidden_size == 64 and first.model.config.num_hidden_layers == 2
    assert first.tokenizer.is_fast and len(first.tokenizer) == 30522
    for a, b in zip(first.model.state_dict().values(), second.model.state_dict().values()):
        assert torch.equal(a, b)
    assert first.tokenizer is second.tokenizer


def test_tokenizer_fingerprint_ignores_call_settings_but_not_the_vocabulary():
    tokenizer = load_encoder(EncoderSettings(name="tiny")).tokenizer
    before = encoders.tokenizer_fingerprint(tokenizer)
    tokenizer(["a b c"], truncation=True, max_length=2, padding="max_length")
    assert encoders.tokenizer_fingerprint(tokenizer) == before
    tokenizer(["a b c"], truncation=False)
    assert encoders.tokenizer_fingerprint(tokenizer) == before
    changed = copy.deepcopy(tokenizer)
    assert encoders.tokenizer_fingerprint(changed) == before
    changed.add_tokens(["nerplat"])  # in place: the fingerprint kept for this object must not be reused
    assert encoders.tokenizer_fingerprint(changed) != before


def test_each_load_is_a_fresh_copy_but_weights_are_read_once_per_process():
    load_encoder(EncoderSettings(name="tiny"))
    reads = encoders.read_tokenizer.cache_info().misses, encoders._tiny_model.cache_info().misses
    trained = load_encoder(EncoderSettings(name="tiny"))
    with torch.no_grad():
        next(trained.model.parameters()).add_(1.0)
    fresh = load_encoder(EncoderSettings(name="tiny"))
    assert not torch.equal(next(trained.model.parameters()), next(fresh.model.parameters()))
    assert (encoders.read_tokenizer.cache_info().misses, encoders._tiny_model.cache_info().misses) == reads


def test_byte_level_bpe_tokenizers_mark_every_word_as_a_word_start(tmp_path):
    from tokenizers import ByteLevelBPETokenizer
    from transformers import RobertaTokenizer

    bpe = ByteLevelBPETokenizer()
    text = ["hello world", "the world says hello"] * 10
    bpe.train_from_iterator(text, vocab_size=280, min_frequency=1, special_tokens=["<s>", "<pad>", "</s>", "<unk>"])
    bpe.save_model(str(tmp_path))
    RobertaTokenizer(vocab=str(tmp_path / "vocab.json"), merges=str(tmp_path / "merges.txt")).save_pretrained(tmp_path)
    tokenizer = encoders.read_tokenizer(str(tmp_path))
    pieces = tokenizer([["world", "world"]], is_split_into_words=True, add_special_tokens=False)["input_ids"][0]
    assert tokenizer.convert_ids_to_tokens(pieces) == ["Ġworld", "Ġworld"]


def test_an_unknown_name_offline_fails_naming_the_model_and_hf_hub_offline(monkeypatch):
    import huggingface_hub.constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(UserInputError) as error:
        load_encoder(EncoderSettings(name="minilm-l7"))
    message = str(error.value)
    assert "minilm-l7" in message and "HF_HUB_OFFLINE" in message and "did you mean 'minilm-l6'" in message
    assert error.value.problems[0].path == "encoder.name"


