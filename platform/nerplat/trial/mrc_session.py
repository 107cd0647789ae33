"""The `mrc` trial variant (Li et al. 2020; Nemoto et al. 2024): `TrialSession`'s epochs over (window,
query) examples instead of word windows (`trial.mrc_features`, `trial.mrc_batching`)."""

from __future__ import annotations

from typing import ClassVar

from nerplat.trial.mrc_features import featurize_mrc_examples
from nerplat.trial.session import TrialSession
from nerplat.trial.variant import Featurize


class MRCSession(TrialSession):
    """Trains, evaluates and checkpoints as `TrialSession`; only what the head reads differs."""

    variant: ClassVar[str] = "mrc"
    featurize: ClassVar[Featurize] = staticmethod(featurize_mrc_examples)
