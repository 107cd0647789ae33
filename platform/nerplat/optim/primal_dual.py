"""What PESG and PDSCA share: proximal (epoch-decay) regularisation, per-group update rules, and the
projected ascent on the AUC dual variables alpha.

Parameter groups are ordinary torch groups with these keys:

- ``lr``; ``update``: "sgd" (LibAUC's momentum-SGD, coupled L2 weight decay) or "adamw" (Adam moments
  on the same regularised gradient, decoupled weight decay: with no clip and no epoch decay this is
  exactly `torch.optim.AdamW`); ``weight_decay``; ``epoch_decay`` (lambda_0 of PESG: pull towards the
  reference point v_ref); ``clip_value`` (element-wise gradient clip, None: off); ``momentum``;
  ``betas``, ``eps`` (adamw);
- ``dual``: True for the one group holding the alphas of the objective's `AUCMarginLoss`es. Its ``lr``
  is the ascent step.

The gradient of a primal parameter is clip(g) + epoch_decay (p - v_ref) (+ weight_decay p for "sgd").
The dual step is LibAUC's: alpha <- max(0, alpha + lr (2 (m + b - a) - 2 alpha)), i.e. ascent on the
alpha-part of the paper's saddle objective with the class means replaced by a and b; it is taken only
for alphas whose loss took part in this step (their ``grad`` is set and not all zero: DDP with
``find_unused_parameters`` may hand unused parameters zero gradients), and the step then clears the
alphas' grads so that participation is read correctly whatever `zero_grad` mode the caller uses.

Deviations from LibAUC 2.0.1 (`PESG`, `PDSCA`), all deliberate:
- v_ref starts at the initial parameters (the paper's v_0 = v_ref). LibAUC starts it as N(0, 0.01)
  noise, so until the first `update_regularizer()` epoch_decay pulls a pretrained encoder towards 0.
- The average iterate behind `update_regularizer()` sums every primal parameter at every step. LibAUC
  sums only parameters that got a gradient but divides by all steps, shrinking the reference of heads
  trained on a subset of steps (OVA-AUC groups, MAML samples) towards 0.
- Parameter groups work: each group has its own lr, update rule and reference. LibAUC indexes its
  reference list per group position and updates alpha once per group, so it is single-group only.
- alpha is projected on [0, inf) (LibAUC clips at 999) and no `device` is guessed (LibAUC defaults to
  cuda when present; PDSCA even to 'cuda' unconditionally).
- The "adamw" update is new: it lets the pretrained encoder keep an AdamW-like step while the heads
  and a, b follow PESG (see `nerplat.objectives.base.PrimalDualSettings`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar

import torch

from nerplat.objectives.aucm import AUCMarginLoss

GROUP_DEFAULTS: dict[str, Any] = {
    "update": "sgd",
    "weight_decay": 0.0,
    "epoch_decay": 0.0,
    "clip_value": None,
    "momentum": 0.0,
    "betas": (0.9, 0.999),
    "eps": 1e-8,
    "dual": False,
    "iterates": 0,  # steps summed into each parameter's iterate_sum since the last reference update
}


class PrimalDualOptimizer(torch.optim.Optimizer):
    """Base of `PESG` and `PDSCA`; subclasses implement `_sgd_update`."""

    group_defaults: ClassVar[dict[str, Any]] = GROUP_DEFAULTS

    def __init__(
        self, param_groups: Iterable[dict[str, Any]], duals: Iterable[AUCMarginLoss], reference_every: int = 1
    ):
        super().__init__(list(param_groups), {"lr": 0.1, **self.group_defaults})
        self.reference_every = reference_every
        self._duals = {id(loss.alpha): loss for loss in duals}
        dual_params = [p for g in self.param_groups if g["dual"] for p in g["params"]]
        if {id(p) for p in dual_params} != set(self._duals):
            raise ValueError("the dual group must hold exactly the alpha of every AUCMarginLoss given as duals")
        for group in self.param_groups:
            if group["update"] not in ("sgd", "adamw"):
                raise ValueError(f"unknown update rule '{group['update']}' (sgd, adamw)")
            if group["epoch_decay"] > 0 and not group["dual"]:
                for p in group["params"]:
                    self.state[p]["reference"] = p.detach().clone()
                    self.state[p]["iterate_sum"] = torch.zeros_like(p)

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        auc_step = any(_took_part(loss_fn.alpha) for loss_fn in self._duals.values())
        for group in self.param_groups:
            if group["dual"]:
                continue
            for p in group["params"]:
                if p.grad is not None:
                    self._primal_update(p, self._regularised_gradient(p, group), group, auc_step)
            if group["epoch_decay"] > 0:
                for p in group["params"]:
                    self.state[p]["iterate_sum"].add_(p)
                group["iterates"] += 1
        for group in self.param_groups:
            if group["dual"]:
                self._dual_ascent(group)
        return loss

    def _regularised_gradient(self, p: torch.Tensor, group: dict[str, Any]) -> torch.Tensor:
        grad = p.grad
        if group["clip_value"] is not None:
            grad = grad.clamp(-group["clip_value"], group["clip_value"])
        if group["epoch_decay"] > 0:
            grad = grad + group["epoch_decay"] * (p - self.state[p]["reference"])
        if group["update"] == "sgd" and group["weight_decay"] > 0:
            grad = grad + group["weight_decay"] * p
        return grad

    def _primal_update(self, p: torch.Tensor, d_p: torch.Tensor, group: dict[str, Any], auc_step: bool) -> None:
        if group["update"] == "adamw":
            self._adamw_update(p, d_p, group, group["lr"])
        else:
            self._sgd_update(p, d_p, group, auc_step)

    def _sgd_update(self, p: torch.Tensor, d_p: torch.Tensor, group: dict[str, Any], auc_step: bool) -> None:
        raise NotImplementedError

    def _momentum_direction(self, p: torch.Tensor, d_p: torch.Tensor, weight_of_new: float) -> torch.Tensor:
        """LibAUC's buffer: first d_p, then (1 - w) buffer + w d_p (w = `momentum`; 0 disables it)."""
        if weight_of_new == 0:
            return d_p
        state = self.state[p]
        if "momentum_buffer" not in state:
            state["momentum_buffer"] = d_p.clone()
        else:
            state["momentum_buffer"].mul_(1 - weight_of_new).add_(d_p, alpha=weight_of_new)
        return state["momentum_buffer"]

    def _adamw_update(self, p: torch.Tensor, d_p: torch.Tensor, group: dict[str, Any], lr: float) -> None:
        state = self.state[p]
        if "exp_avg" not in state:
            state["adam_steps"] = 0
            state["exp_avg"] = torch.zeros_like(p)
            state["exp_avg_sq"] = torch.zeros_like(p)
        state["adam_steps"] += 1
        beta1, beta2 = group["betas"]
        p.mul_(1 - lr * group["weight_decay"])
        state["exp_avg"].lerp_(d_p, 1 - beta1)
        state["exp_avg_sq"].mul_(beta2).addcmul_(d_p, d_p, value=1 - beta2)
        bias1 = 1 - beta1 ** state["adam_steps"]
        bias2 = 1 - beta2 ** state["adam_steps"]
        denom = (state["exp_avg_sq"].sqrt() / bias2**0.5).add_(group["eps"])
        p.addcdiv_(state["exp_avg"], denom, value=-lr / bias1)

    def _dual_ascent(self, group: dict[str, Any]) -> None:
        for alpha in group["params"]:
            if not _took_part(alpha):
                alpha.grad = None
                continue
            loss_fn = self._duals[id(alpha)]
            ascent = 2 * (loss_fn.margin + loss_fn.b - loss_fn.a) - 2 * alpha
            alpha.add_(group["lr"] * ascent).clamp_(min=0.0)
            alpha.grad = None

    def end_epoch(self, epoch: int) -> None:
        """Epoch hook (``epoch`` 0-based): every `reference_every` epochs, `update_regularizer()`."""
        if (epoch + 1) % self.reference_every == 0:
            self.update_regularizer()

    def update_regularizer(self) -> None:
        """Move each reference point v_ref to the average iterate since the last update (PESG's stage end)."""
        for group in self.param_groups:
            if group["dual"] or group["epoch_decay"] == 0 or group["iterates"] == 0:
                continue
            for p in group["params"]:
                state = self.state[p]
                state["reference"].copy_(state["iterate_sum"] / group["iterates"])
                state["iterate_sum"].zero_()
            group["iterates"] = 0


def _took_part(alpha: torch.Tensor) -> bool:
    """Whether alpha's AUC loss was in this step's loss: a gradient that is set and not all zero."""
    return alpha.grad is not None and bool(alpha.grad.any())
