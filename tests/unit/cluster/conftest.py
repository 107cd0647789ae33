"""A scratch repository layout for the cluster tests (the repository's own folders: repo_paths)."""

from pathlib import Path

import pytest

@pytest.fixture
def spec_repo(tmp_path: Path) -> Path:
    """A repository-like folder with specs/tiny.yaml (resources, concurrency and a `paper` profile)."""
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "tiny.yaml").write_text(
        """\
experiment: tiny_conll
dataset: conll2003
train: {lr: {loguniform: [1.0e-5, 1.0e-4]}}
methods:
  ce: {loss: ce}
resources: {workers: 2, cpus_per_worker: 3, gpus_per_worker: 1, custom: {"accelerator_type:A100": 0.01}}
tune: {max_concurrent: 3, num_samples: 4}
profiles:
  paper:
    resources: {gpus_per_worker: 0.5}
  cpu:
    resources: {workers: 1, cpus_per_worker: 2, gpus_per_worker: 0, custom: null}
    tune: {max_concurrent: null}
""",
        encoding="utf-8",
    )
    return tmp_path
