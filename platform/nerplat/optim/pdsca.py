"""PDSCA, primal-dual stochastic compositional adaptive method (Yuan, Guo, Chawla & Yang 2022, ICLR;
LibAUC `PDSCA`), for compositional AUC training: COMAUC-2T.

A step is an inner (cross-entropy) step when no AUC dual variable received a gradient, an outer (AUC)
step otherwise, as in LibAUC. With d_p the regularised gradient (see `primal_dual`):

- inner, "sgd" groups:  p <- p - inner_lr_scale * lr * d_p, then p <- u with
  u <- (1 - weight_average) u + weight_average p (u starts at the first such p);
- outer, "sgd" groups:  buffer <- (1 - momentum) buffer + momentum d_p;  p <- p - lr * buffer;
- "adamw" groups: one AdamW-style step on d_p, at inner_lr_scale * lr on inner steps;
- outer steps also take the projected ascent on alpha.

Group keys beyond `primal_dual`'s: ``inner_lr_scale`` (LibAUC's lr0 / lr: the inner rate follows the
scheduler with the outer one instead of decaying separately) and ``weight_average`` (LibAUC beta1);
``momentum`` is LibAUC's beta2. LibAUC trap avoided: its alpha is not among the optimiser's
parameters, so `zero_grad()` never clears it and after the first AUC step every step counts as one;
here the step clears the alphas' grads itself.
"""

from __future__ import annotations

from typing import Any, ClassVar

import torch

from nerplat.optim.primal_dual import GROUP_DEFAULTS, PrimalDualOptimizer


class PDSCA(PrimalDualOptimizer):
    group_defaults: ClassVar[dict[str, Any]] = {**GROUP_DEFAULTS, "inner_lr_scale": 1.0, "weight_average": 0.99}

    def _primal_update(self, p: torch.Tensor, d_p: torch.Tensor, group: dict[str, Any], auc_step: bool) -> None:
        if group["update"] == "adamw":
            lr = group["lr"] if auc_step else group["lr"] * group["inner_lr_scale"]
            self._adamw_update(p, d_p, group, lr)
        else:
            self._sgd_update(p, d_p, group, auc_step)

    def _sgd_update(self, p: torch.Tensor, d_p: torch.Tensor, group: dict[str, Any], auc_step: bool) -> None:
        if auc_step:
            p.add_(self._momentum_direction(p, d_p, group["momentum"]), alpha=-group["lr"])
            return
        p.add_(d_p, alpha=-group["lr"] * group["inner_lr_scale"])
        weight = group["weight_average"]
        if weight == 0:
            return
        state = self.state[p]
        if "weight_buffer" not in state:
            state["weight_buffer"] = p.detach().clone()
        else:
            state["weight_buffer"].mul_(1 - weight).add_(p, alpha=weight)
        p.copy_(state["weight_buffer"])
