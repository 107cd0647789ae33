"""PESG, proximal epoch stochastic gradient (Yuan, Yan, Sonka & Yang 2021, ICCV, Alg. 1; LibAUC `PESG`).

For the AUC margin loss min_{w,a,b} max_{alpha>=0} f(w, a, b, alpha):

    v_{t+1}     = v_t - lr (clip(grad_v f) + epoch_decay (v_t - v_ref) + weight_decay v_t),  v = (w, a, b)
    alpha_{t+1} = [alpha_t + lr grad_alpha f]_+
    v_ref <- average iterate, every `reference_every` epochs (`update_regularizer`)

The "sgd" update uses LibAUC's momentum buffer (buffer <- (1 - momentum) buffer + momentum d_p: the
`momentum` is the weight of the new gradient, not torch.optim.SGD's), so with one group, no "adamw"
group and the reference set to the initial weights it reproduces LibAUC 2.0.1's PESG (tested); shared
mechanics and every deviation from LibAUC are described in `primal_dual`.
"""

from __future__ import annotations

from typing import Any

import torch

from nerplat.optim.primal_dual import PrimalDualOptimizer


class PESG(PrimalDualOptimizer):
    def _sgd_update(self, p: torch.Tensor, d_p: torch.Tensor, group: dict[str, Any], auc_step: bool) -> None:
        p.add_(self._momentum_direction(p, d_p, group["momentum"]), alpha=-group["lr"])
