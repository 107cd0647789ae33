"""On-disk cache of numpy arrays keyed by a JSON description: token features, trained word embeddings.

An entry is one `.npz` file named by the sha256 of its key text, which it also stores, so a hash
collision or a stale format reads as a miss. Files are written to a temporary name and renamed, so
concurrent trials never read a half-written entry; an unreadable entry is a miss and is rewritten.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
import zipfile
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)


def default_cache_dir() -> Path:
    return Path(os.environ.get("NERPLAT_CACHE") or Path.home() / ".cache" / "nerplat")


def entry_path(cache_dir: Path | None, kind: str, key_text: str) -> Path:
    """Where the entry of `key_text` lives: `<cache>/<kind>/<sha256>.npz`."""
    return (cache_dir or default_cache_dir()) / kind / f"{hashlib.sha256(key_text.encode()).hexdigest()}.npz"


def read_arrays(path: Path, key_text: str, names: list[str]) -> dict[str, np.ndarray] | None:
    """The arrays `names` of the entry at `path`, or None when it is missing, stale or unreadable."""
    if not path.exists():
        return None
    try:
        with np.load(path) as stored:
            if str(stored["key"]) != key_text:
                return None
            arrays = {name: stored[name] for name in names}
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as error:
        log.warning("ignoring unreadable cache entry %s: %s", path, error)
        return None
    log.debug("cache hit %s", path)
    return arrays


def write_arrays(path: Path, key_text: str, arrays: dict[str, np.ndarray]) -> None:
    """Store `arrays` with their key, atomically (temporary file, then `os.replace`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=path.stem, suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as stream:
            np.savez(stream, key=np.asarray(key_text), **arrays)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise
