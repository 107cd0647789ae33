"""The contract between heads, objectives, optimisers and the trial loop.

An objective is one registered entry: a config model (what a spec may say) and a factory
``build(config, context) -> Objective``. The config class also tells the spec compiler which heads
the objective can train (``heads``, ``default_head``) and which optimiser it needs (``optimizer``:
"adamw" | "pesg" | "pdsca"); `nerplat.optim.build_optimizer` reads the same ClassVars.

Per batch the trial loop runs, for ``substep`` in ``range(objective.num_substeps)``: a fresh forward
pass of the model, ``loss = objective(head_output, labels, substep)``, backward, one optimiser step
and one scheduler step. Most objectives have one substep; OVA-AUC has three (its B/I/O groups) and
COMAUC-2T has ``k`` cross-entropy substeps followed by one AUC substep.

Objectives that carry state (AUC margin losses: ``a``, ``b``, ``alpha`` per binary task) own it as
``nn.Parameter``s or buffers, so it moves with ``.to(device)``, is saved by ``state_dict()`` and is
synchronised across workers like model parameters. The trial loop therefore moves, checkpoints and
(under DDP) wraps the objective together with the model.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar, Literal

import torch
from pydantic import BaseModel, ConfigDict, Field
from torch import nn

from nerplat.models.heads.base import IGNORE, HeadOutput

OptimizerName = Literal["adamw", "pesg", "pdsca"]


@dataclass(frozen=True)
class ObjectiveContext:
    """What an objective may know about the training data, fixed before training starts.

    Attributes
    ----------
    labels : list[str]
        The corpus label list (`Corpus.labels()`): "O" first, then B-/I- per type.
    label_counts : list[int]
        Training-set word counts per label id (after samplers): class weights and AUC imratios.
    max_length : int
        M, the padded sequence length, the normaliser of the MoM term (Nemoto et al. 2024, eq. 1).
    seed : int
        Trial seed; objectives that sample (OVA-AUC-MAML) derive their draws from it.
    """

    labels: list[str]
    label_counts: list[int]
    max_length: int
    seed: int = 0

    def __post_init__(self) -> None:
        if len(self.labels) != len(self.label_counts):
            raise ValueError(f"{len(self.labels)} labels but {len(self.label_counts)} label counts")
        if any(c < 0 for c in self.label_counts):
            raise ValueError(f"label counts must be >= 0, got {self.label_counts}")
        if self.max_length < 1:
            raise ValueError(f"max_length must be >= 1, got {self.max_length}")

    @property
    def num_labels(self) -> int:
        return len(self.labels)

    def positive_share(self, positive: list[bool]) -> float:
        """Share of training words whose label is marked positive: the imratio of a binary task."""
        total = sum(self.label_counts)
        if total == 0:
            return 0.0
        return sum(c for c, p in zip(self.label_counts, positive) if p) / total


class ObjectiveConfig(BaseModel):
    """Base of every objective's config model.

    ClassVars (read by the spec compiler and by `nerplat.optim.build_optimizer`)
    ---------------------------------------------------------------------------
    heads : heads this objective can train.
    default_head : the head a spec gets when it names only the loss.
    optimizer : "adamw" | "pesg" | "pdsca".
    default_head_lr : learning rate of head and loss state when the spec leaves `train.head_lr`
        unset (None: fall back to `train.lr`). The AUC objectives set LibAUC's 0.1.
    """

    model_config = ConfigDict(
        extra="forbid", frozen=True, allow_inf_nan=False, validate_by_name=True, validate_by_alias=True
    )

    heads: ClassVar[tuple[str, ...]] = ("softmax", "bilstm_softmax")
    default_head: ClassVar[str] = "softmax"
    optimizer: ClassVar[OptimizerName] = "adamw"
    default_head_lr: ClassVar[float | None] = None

    def substeps(self, labels: Sequence[str]) -> int:
        """Forward and backward passes a training batch takes (`Objective.num_substeps`); the cost
        model (`nerplat.estimate.cost`) reads it before any trial runs."""
        return 1


class PrimalDualSettings(ObjectiveConfig):
    """Optimiser recipe of the AUC objectives (PESG / PDSCA), exposed in the spec.

    The naive recipe (one PESG learning rate and one SGD-style update for the whole model) collapsed
    on MiniLM (`objectives.auc_2t`): the default here keeps the pretrained
    encoder on an AdamW update at `train.lr` and runs PESG's momentum-SGD only on the heads and the
    AUC state (a, b) at `train.head_lr` (0.1 unless set), with the projected ascent on alpha at that
    same rate. Set `encoder_update: sgd` and `head_lr` = `lr` to reproduce the naive recipe.
    """

    optimizer: ClassVar[OptimizerName] = "pesg"
    default_head_lr: ClassVar[float | None] = 0.1

    encoder_update: Literal["adamw", "sgd"] = Field(
        "adamw", description="Update rule of the pretrained encoder: AdamW moments, or LibAUC's momentum-SGD."
    )
    head_update: Literal["sgd", "adamw"] = Field(
        "sgd", description="Update rule of head weights and the AUC state a, b."
    )
    epoch_decay: float = Field(
        2e-3, ge=0, description="Proximal weight pulling parameters towards the reference point (LibAUC epoch_decay)."
    )
    reference_every: int = Field(
        1, ge=1, description="Reset the proximal reference to the average iterate every this many epochs."
    )
    clip_value: float | None = Field(
        1.0, gt=0, description="Element-wise gradient clip before the update (LibAUC clip_value); null: no clip."
    )
    momentum: float = Field(
        0.9,
        ge=0,
        le=1,
        description="LibAUC's PESG momentum: weight of the new gradient in the running buffer (0: plain SGD).",
    )


class Objective(nn.Module):
    """A training objective: ``forward(output, labels, substep) -> scalar loss``.

    ``labels`` are word-level label ids ``[batch, words]`` with `IGNORE` (-100) on padding, aligned
    with ``output.scores`` ``[batch, words, K]``.
    """

    num_substeps: int = 1

    def __init__(self, config: ObjectiveConfig):
        super().__init__()
        self.config = config

    def forward(self, output: HeadOutput, labels: torch.Tensor, substep: int = 0) -> torch.Tensor:
        raise NotImplementedError

    def check_substep(self, substep: int) -> None:
        if not 0 <= substep < self.num_substeps:
            raise ValueError(f"{type(self).__name__} has {self.num_substeps} substep(s); got substep {substep}")


def labelled_words(output: HeadOutput, labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Scores ``[N, K]`` (float32) and label ids ``[N]`` of the N labelled real words of a batch."""
    if output.scores.shape[:2] != labels.shape:
        raise ValueError(f"scores {tuple(output.scores.shape)} do not match labels {tuple(labels.shape)}")
    keep = (labels != IGNORE) & output.mask.bool()
    return output.scores[keep].float(), labels[keep]


def check_width(scores: torch.Tensor, width: int, what: str) -> None:
    if scores.shape[-1] != width:
        raise ValueError(f"{what} expects {width} scores per word, the head gives {scores.shape[-1]}")



def bio_prefix(label: str) -> Literal["B", "I", "O"]:
    """'B', 'I' or 'O' for an IOB2 label ('B-PER', 'I-ENT', 'O'; bare 'B'/'I' of untyped corpora)."""
    if label == "O":
        return "O"
    if label[:1] in ("B", "I") and (len(label) == 1 or label[1] == "-"):
        return label[0]  # type: ignore[return-value]
    raise ValueError(f"label '{label}' is not IOB2 (expected O, B-TYPE or I-TYPE)")


def zero_loss(output: HeadOutput) -> torch.Tensor:
    """A zero loss connected to the graph, for a batch without labelled words (backward still works)."""
    return output.scores.sum() * 0.0
