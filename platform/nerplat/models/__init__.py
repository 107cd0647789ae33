"""Encoders and heads. Torch lives here; Ray and MLflow do not.

Importing any `nerplat.models` module registers every built-in encoder (as `models/heads/__init__.py`
does for heads): the registry lives in `encoder_registry`, and the modules that fill it import it,
never each other for registration.
"""

from nerplat.models import encoders, word_embeddings  # noqa: F401  (registration of the encoders)
