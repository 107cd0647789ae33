"""Training objectives: one module per method of the papers in docs/papers.md, registered under its spec name.

Importing the package registers every objective; `build_objective(name, params, context)` builds one.
The contract (configs, substeps, state) is in `nerplat.objectives.base`.
"""

from nerplat.objectives.registry import OBJECTIVES
from nerplat.objectives import (  # noqa: F401  (registration on import)
    auc_2t,
    ce,
    ce_2t,
    comauc_2t,
    crf,
    dice,
    focal,
    mom,
    mrc_bce,
    mrc_dice,
    mrc_focal,
    mrc_mom,
    ova_auc,
    ova_auc_maml,
    ova_bce,
    wce,
)
from nerplat.objectives.base import Objective, ObjectiveConfig, ObjectiveContext
from nerplat.objectives.build import build_objective

__all__ = ["OBJECTIVES", "Objective", "ObjectiveConfig", "ObjectiveContext", "build_objective"]
