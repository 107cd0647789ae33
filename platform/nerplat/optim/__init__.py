"""Optimisers for the objectives: AdamW with linear warm-up and decay, PESG and PDSCA for AUC losses.

`build_optimizer` picks one from the objective's config; `clip_gradients` and `end_epoch` are the two
other calls the trial loop makes (see `nerplat.optim.factory`).
"""

from nerplat.optim.factory import build_optimizer, clip_gradients, end_epoch, head_learning_rate, learning_rate_schedule
from nerplat.optim.parameter_groups import ParameterSplit, split_parameters
from nerplat.optim.pdsca import PDSCA
from nerplat.optim.pesg import PESG

__all__ = [
    "PDSCA",
    "PESG",
    "ParameterSplit",
    "build_optimizer",
    "clip_gradients",
    "end_epoch",
    "head_learning_rate",
    "learning_rate_schedule",
    "split_parameters",
]
