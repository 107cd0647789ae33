"""Random generators keyed by what they are for, so every draw is reproducible on its own.

A key such as ``("low_resource", partition)`` always gives the same stream, whatever else ran
before, on any machine and Python version (the integer seed comes from sha256 of the key).
"""

from __future__ import annotations

import hashlib
import random


def seeded_rng(*key: object) -> random.Random:
    digest = hashlib.sha256(repr(key).encode("utf-8")).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))
