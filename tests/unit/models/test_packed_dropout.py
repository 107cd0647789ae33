import copy

import pytest
import torch
from torch import nn

from nerplat.config.trial import EncoderSettings
from nerplat.models.encoders import load_encoder
from nerplat.models.packed_dropout import (
    ATTENTION,
    PackedDropout,
    keep_mask,
    packed_dropout,
    packed_dropout_attention,
    use_packed_dropout,
)


@pytest.mark.parametrize("p", [0.1, 0.5, 0.9])
def test_a_mask_keeps_each_element_with_probability_one_minus_p(p: float):
    torch.manual_seed(0)
    mask = keep_mask((1000, 1000), p)
    assert mask.dtype == torch.bool and mask.shape == (1000, 1000)
    kept = mask.double().mean().item()
    assert abs(kept - (1 - p)) < 5 * (p * (1 - p) / 1e6) ** 0.5


def test_masks_are_uniform_over_positions_and_reproducible_from_the_seed():
    torch.manual_seed(1)
    masks = torch.stack([keep_mask((7, 5), 0.5) for _ in range(4000)]).double()
    assert (masks.mean(0) - 0.5).abs().max() < 0.05  # every position, whichever third of a draw it takes
    torch.manual_seed(1)
    assert torch.equal(keep_mask((7, 5), 0.5), masks[0].bool())


def test_dropout_zeroes_or_scales_and_keeps_the_expectation():
    torch.manual_seed(2)
    x = torch.rand(2000, 500) + 1.0
    out = packed_dropout(x, 0.2)
    scaled = out != 0
    assert torch.allclose(out[scaled], x[scaled] / 0.8)
    assert abs(out.mean().item() / x.mean().item() - 1) < 0.01
    assert packed_dropout(x, 0.0) is x and not packed_dropout(x, 1.0).any()


def test_the_gradient_is_the_same_mask_and_scale():
    torch.manual_seed(3)
    x = torch.randn(50, 40, requires_grad=True)
    out = packed_dropout(x, 0.3)
    out.sum().backward()
    assert torch.allclose(x.grad, (out != 0).float() / 0.7)


def test_the_module_is_the_identity_in_evaluation():
    dropout = PackedDropout(0.5).eval()
    x = torch.randn(10, 10)
    assert dropout(x) is x
    assert not torch.equal(dropout.train()(x), x)


def test_a_model_loses_every_stock_dropout_and_evaluates_exactly_as_before():
    stock = load_encoder(EncoderSettings(name="tiny")).model
    packed = use_packed_dropout(copy.deepcopy(stock))
    assert not any(type(m) is nn.Dropout for m in packed.modules())
    assert sum(isinstance(m, PackedDropout) for m in packed.modules()) == sum(type(m) is nn.Dropout for m in stock.modules())
    assert packed.config._attn_implementation == ATTENTION and stock.config._attn_implementation == "sdpa"
    ids, mask = torch.randint(1000, 2000, (3, 9)), torch.ones(3, 9, dtype=torch.long)
    mask[0, 5:] = 0  # padding: the attention mask must reach the packed attention too
    with torch.no_grad():
        assert torch.equal(stock.eval()(input_ids=ids, attention_mask=mask).last_hidden_state,
                           packed.eval()(input_ids=ids, attention_mask=mask).last_hidden_state)  # fmt: skip


def _attention_only(model: nn.Module, p: float) -> nn.Module:
    """The model with hidden dropout off and attention dropout at p."""
    for module in model.modules():
        if isinstance(module, (nn.Dropout, PackedDropout)):
            module.p = 0.0
    for layer in model.encoder.layer:
        layer.attention.self.dropout.p = p
    return model


def test_packed_attention_is_sdpa_without_dropout_and_drops_and_backpropagates_with_it():
    stock = load_encoder(EncoderSettings(name="tiny")).model
    packed = _attention_only(use_packed_dropout(copy.deepcopy(stock)), 0.0).train()
    ids, mask = torch.randint(1000, 2000, (2, 8)), torch.ones(2, 8, dtype=torch.long)
    mask[1, 6:] = 0
    reference = _attention_only(copy.deepcopy(stock), 0.0).train()(input_ids=ids, attention_mask=mask).last_hidden_state
    assert torch.allclose(packed(input_ids=ids, attention_mask=mask).last_hidden_state, reference, atol=1e-5)
    for layer in packed.encoder.layer:
        layer.attention.self.dropout.p = 0.5
    dropped = packed(input_ids=ids, attention_mask=mask).last_hidden_state
    assert not torch.allclose(dropped, reference, atol=1e-3)
    dropped.sum().backward()
    assert all(p.grad is not None for p in packed.encoder.layer[0].attention.parameters())


def test_the_eager_branch_computes_sdpas_attention_under_a_padding_mask():
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    torch.manual_seed(4)
    query, key, value = (torch.randn(2, 3, 6, 8) for _ in range(3))
    allowed = torch.ones(2, 1, 6, 6, dtype=torch.bool)
    allowed[1, :, :, 4:] = False  # the second sequence's last two positions are padding
    module = nn.Module()
    module.is_causal = False
    # p = 1e-6 rounds to 0 in the 16-bit mask: the eager branch runs and keeps every probability.
    ours, _ = packed_dropout_attention(module, query, key, value, allowed, dropout=1e-6, scaling=0.3)
    theirs, _ = sdpa_attention_forward(module, query, key, value, allowed, dropout=0.0, scaling=0.3)
    assert torch.allclose(ours, theirs, atol=1e-4)
