"""Heads: one module per head, registered under the name specs use."""

from nerplat.models.heads.registry import HEADS
from nerplat.models.heads import bilstm_crf, bilstm_softmax, crf, crfsuite, mrc, ova, softmax, two_task  # noqa: F401  (registration)

__all__ = ["HEADS"]
