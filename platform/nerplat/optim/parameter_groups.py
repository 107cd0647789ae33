"""Which parameters an optimiser sees, and how: pretrained encoder vs head, decayed vs not, AUC state.

The model is any `nn.Module`; the parameters of its ``encoder`` attribute (the pretrained Hugging Face
module of a `Tagger`) form the encoder, every other trainable parameter of the model is "head". A
model without ``encoder`` is all head. Biases and normalisation weights (tensors of fewer than 2
dimensions) get no weight decay, as in BERT's recipe. The objective's trainable parameters join the
head, split into AUC primal state (a, b of each `AUCMarginLoss`: descent, never decayed), AUC duals
(alpha: ascent, owned by PESG/PDSCA) and anything else (no decay).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from torch import nn

from nerplat.objectives.aucm import AUCMarginLoss


@dataclass
class ParameterSplit:
    encoder_decay: list[nn.Parameter] = field(default_factory=list)
    encoder_no_decay: list[nn.Parameter] = field(default_factory=list)
    head_decay: list[nn.Parameter] = field(default_factory=list)
    head_no_decay: list[nn.Parameter] = field(default_factory=list)
    auc_state: list[nn.Parameter] = field(default_factory=list)
    auc_losses: list[AUCMarginLoss] = field(default_factory=list)


def split_parameters(model: nn.Module, objective: nn.Module) -> ParameterSplit:
    """Trainable parameters of ``model`` and ``objective`` sorted by role (each parameter once)."""
    split = ParameterSplit()
    seen: set[int] = set()

    def fresh(parameters):
        for p in parameters:
            if p.requires_grad and id(p) not in seen:
                seen.add(id(p))
                yield p

    encoder = getattr(model, "encoder", None)
    if encoder is not None:
        for p in fresh(encoder.parameters()):
            (split.encoder_decay if p.ndim >= 2 else split.encoder_no_decay).append(p)
    for p in fresh(model.parameters()):
        (split.head_decay if p.ndim >= 2 else split.head_no_decay).append(p)
    for module in objective.modules():
        if isinstance(module, AUCMarginLoss):
            split.auc_losses.append(module)
            split.auc_state.extend(fresh([module.a, module.b]))
            seen.add(id(module.alpha))
    split.head_no_decay.extend(fresh(objective.parameters()))
    return split
