"""Dropout whose keep masks are drawn three to a random 64-bit word: cheaper masks for CPU training.

On the CPU, `torch.bernoulli_` draws one uniform double (two 32-bit Mersenne-twister outputs) per
element, serially, whatever the thread count: at MiniLM's shapes and 2 threads the masks took 0.105
of a training step's op time (docs/performance.md). Here one draw of 48 uniform bits gives three
16-bit uniforms, and an element is kept when its uniform is at least p: a third of the draws, and
the same distribution as `nn.Dropout` except that p is rounded to a multiple of 2^-16 (0.1 becomes
0.100006).

`use_packed_dropout` puts it in a model: every `nn.Dropout` becomes a `PackedDropout` of the same
p, and a transformers encoder on `sdpa` or `eager` attention gets `packed_dropout_attention`, which
computes attention in the eager way (the probabilities must exist to be dropped) when attention
dropout is on, and is `sdpa` itself otherwise (evaluation, or p = 0). CUDA draws masks with
Philox in parallel, so the trial applies this on the CPU only.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

from nerplat.models.encoders import quiet_transformers

ATTENTION = "nerplat_packed_dropout"
_RESOLUTION = 1 << 16  # 16-bit uniforms
_DRAW_BITS = 48  # three of them per draw


def keep_mask(shape: torch.Size | tuple[int, ...], p: float, device: torch.device | str = "cpu") -> torch.Tensor:
    """A bool tensor of `shape`, each element True with probability 1 - p (p rounded to 2^-16)."""
    count = math.prod(shape)
    draws = torch.empty((count + 2) // 3, dtype=torch.int64, device=device).random_(0, 1 << _DRAW_BITS)
    # Little-endian: the three low 16-bit halves of each draw hold its 48 bits (the fourth is zero).
    # Read as int16 they are uniform on [-32768, 32767]; keeping those >= p * 2^16 - 2^15 keeps 1 - p.
    uniforms = draws.view(torch.int16).view(-1, 4)[:, :3]
    keep = uniforms >= round(p * _RESOLUTION) - _RESOLUTION // 2
    return keep.reshape(-1)[:count].view(shape)


def packed_dropout(x: torch.Tensor, p: float) -> torch.Tensor:
    """Inverted dropout of `x` in training: zeroes each element with probability p, scales the rest by 1 / (1 - p)."""
    if p == 0.0:
        return x
    if p == 1.0:
        return torch.zeros_like(x)
    return x * (keep_mask(x.shape, p, x.device).to(x.dtype) * (1.0 / (1.0 - p)))


class PackedDropout(nn.Module):
    """`nn.Dropout` with packed keep masks (module docstring)."""

    def __init__(self, p: float):
        super().__init__()
        self.p = p

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return packed_dropout(x, self.p) if self.training else x

    def extra_repr(self) -> str:
        return f"p={self.p}"


def packed_dropout_attention(
    module: nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    dropout: float = 0.0,
    scaling: float | None = None,
    **kwargs: Any,
) -> tuple[torch.Tensor, None]:
    """A transformers attention function: eager attention with packed dropout on its probabilities.

    Without dropout, and for what the eager form here does not cover (causal or grouped-query
    attention, position biases), it is transformers' `sdpa_attention_forward` unchanged.
    """
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    causal = kwargs.get("is_causal", getattr(module, "is_causal", False))
    grouped = getattr(module, "num_key_value_groups", 1) > 1
    if dropout == 0.0 or causal or grouped or kwargs.get("position_bias") is not None:
        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, **kwargs)
    scores = torch.matmul(query, key.transpose(2, 3)) * (scaling if scaling is not None else query.shape[-1] ** -0.5)
    if attention_mask is not None:
        if attention_mask.dtype == torch.bool:  # sdpa's mask: True where a position may be attended
            scores = scores.masked_fill(~attention_mask, torch.finfo(scores.dtype).min)
        else:
            scores = scores + attention_mask
    probabilities = packed_dropout(torch.softmax(scores, dim=-1), dropout)
    return torch.matmul(probabilities, value).transpose(1, 2).contiguous(), None


def _register_attention() -> None:
    from transformers import AttentionInterface, AttentionMaskInterface
    from transformers.masking_utils import sdpa_mask

    AttentionInterface.register(ATTENTION, packed_dropout_attention)
    AttentionMaskInterface.register(ATTENTION, sdpa_mask)  # the masks sdpa takes, which the fallback needs


def use_packed_dropout(model: nn.Module) -> nn.Module:
    """Swaps `model`'s dropout for packed dropout in place (module docstring); returns it.

    The attention implementation is a runtime setting, not saved with a model's config, so a saved
    model loads with `sdpa` anywhere. Models that do not take attention functions (DeBERTa) keep
    their own attention and its stock dropout.
    """
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if type(child) is nn.Dropout:
                setattr(parent, name, PackedDropout(child.p))
    attending = [
        module for module in model.modules()
        if hasattr(module, "set_attn_implementation")
        and getattr(getattr(module, "config", None), "_attn_implementation", None) in ("sdpa", "eager")
    ]  # fmt: skip
    if attending:
        _register_attention()
    for module in attending:
        with quiet_transformers():  # models off the AttentionInterface (DeBERTa) say so and keep theirs
            module.set_attn_implementation(ATTENTION)
    return model
