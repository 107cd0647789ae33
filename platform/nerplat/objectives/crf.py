"""Negative log-likelihood of a linear-chain CRF over words (Lafferty et al. 2001; the CRF baseline of
Nguyen et al. 2023a, Table 2 and Nguyen et al. 2023b, also under a BiLSTM).

L = (1/B) sum_n -log p(y_n | x_n), averaged over the B sentences of the batch, with
-log p(y | x) = log Z(x) - score(x, y) computed by the head's CRF layer (`HeadOutput.crf.nll`, forward
algorithm over the word positions). Words are the first sub-token of each word, as for every head;
Nguyen et al. 2023a note their CRF baseline could not use word pieces, which word-level emissions side-step.
"""

from __future__ import annotations

from typing import ClassVar

import torch

from nerplat.models.heads.base import IGNORE, HeadOutput
from nerplat.objectives.base import Objective, ObjectiveConfig, ObjectiveContext
from nerplat.objectives.registry import OBJECTIVES


class CRFConfig(ObjectiveConfig):
    """The CRF likelihood takes no parameters."""

    heads: ClassVar[tuple[str, ...]] = ("crf", "bilstm_crf", "crfsuite")  # crfsuite: its own L-BFGS fit of this likelihood
    default_head: ClassVar[str] = "crf"


class CRFLikelihood(Objective):
    def forward(self, output: HeadOutput, labels: torch.Tensor, substep: int = 0) -> torch.Tensor:
        self.check_substep(substep)
        if output.crf is None:
            raise ValueError("the crf objective needs a CRF head (crf, bilstm_crf): HeadOutput.crf is None")
        mask = output.mask.bool() & (labels != IGNORE)
        tags = labels.masked_fill(~mask, 0)
        return output.crf.nll(output.scores.float(), tags, mask).mean()


@OBJECTIVES.register("crf", config=CRFConfig)
def build(config: CRFConfig, context: ObjectiveContext) -> CRFLikelihood:
    """Negative log-likelihood of the head's linear-chain CRF, mean over sentences."""
    return CRFLikelihood(config)
