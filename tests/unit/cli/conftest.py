"""The registered tiny tagger the model commands are tested on (tests/support/registered_tagger.py)."""

from registered_tagger import store  # noqa: F401  (pytest fixture)
