"""The trial variants by name (`trial.variant`); a head's config names its own (`HeadConfig.variant`).

A new variant is a `Session` class in a module of its own (subclassing `TrialSession` when it trains
by epochs of optimiser steps and only reads other examples, as `MRCSession` does) and its line here.
"""

from __future__ import annotations

from typing import Any, Sequence

from nerplat.config.trial import Component, EncoderSettings
from nerplat.data.corpus import Sentence
from nerplat.models.tagger import head_variant
from nerplat.trial.feature_crf import FeatureCRFSession
from nerplat.trial.mrc_session import MRCSession
from nerplat.trial.session import TrialSession
from nerplat.trial.variant import Examples, Session

VARIANTS: dict[str, type[Session]] = {session.variant: session for session in (TrialSession, MRCSession, FeatureCRFSession)}


def session_for(head: Component) -> type[Session]:
    """The session class of the variant `head`'s registration names."""
    variant = head_variant(head)
    if variant not in VARIANTS:
        raise ValueError(
            f"head '{head.name}' names the trial variant '{variant}', which is none of {', '.join(sorted(VARIANTS))}"
        )
    return VARIANTS[variant]


def featurize_for_head(
    head: Component, corpus: str, sentences: Sequence[Sentence], tokenizer: Any, settings: EncoderSettings, labels: list[str]
) -> Examples:
    """The examples a trial of `head` reads of `sentences` (its variant's `featurize`)."""
    return session_for(head).featurize(head, corpus, sentences, tokenizer, settings, labels)
