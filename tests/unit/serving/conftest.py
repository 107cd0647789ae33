"""Session fixtures: tiny taggers trained for real and saved as bundles (see tiny_taggers; the softmax
one, `softmax_dir`, is in tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tiny_taggers import train_bundle

from nerplat.serving.bundle import TaggerBundle, load_bundle


@pytest.fixture(scope="session")
def crf_dir(tmp_path_factory) -> Path:
    return train_bundle("crf", tmp_path_factory.mktemp("bundles"))


@pytest.fixture(scope="session")
def two_task_dir(tmp_path_factory) -> Path:
    return train_bundle("two_task", tmp_path_factory.mktemp("bundles"))


@pytest.fixture(scope="session")
def softmax_bundle(softmax_dir) -> TaggerBundle:
    return load_bundle(softmax_dir)
