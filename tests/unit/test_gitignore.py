"""What `nerplat run` writes in a checkout (the stores, reports, caches) is ignored by git, so
`git status` after the README's tour shows only what a person changed."""

import subprocess

import pytest

from repo_paths import REPO

WRITTEN_BY_A_RUN = ("mlflow.db", "mlflow.db.lock", "optuna.db", "mlartifacts/x", "mlruns/x", ".nerplat/x", "reports/x/report.md")


@pytest.mark.parametrize("path", WRITTEN_BY_A_RUN)
def test_what_a_run_writes_is_ignored(path):
    found = subprocess.run(["git", "check-ignore", "--no-index", "-q", path], cwd=REPO, check=False)
    assert found.returncode == 0, f"{path} is not in .gitignore"
