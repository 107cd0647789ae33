"""What produced a result: package versions, Python, and the git commit of the nerplat source tree.

Recorded once per experiment (summary run artifact) and as tags on every run, so a number in a
table can be traced to the exact code that made it.
"""

from __future__ import annotations

import platform
import subprocess
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

TRACKED_PACKAGES = ("nerplat", "torch", "ray", "transformers", "mlflow", "optuna", "polars", "seqeval")


@dataclass(frozen=True)
class GitState:
    commit: str
    dirty: bool  # tracked files differ from the commit


def package_versions(packages: tuple[str, ...] = TRACKED_PACKAGES) -> dict[str, str | None]:
    """Installed distribution versions (None when not installed), plus `python`."""
    versions: dict[str, str | None] = {}
    for name in packages:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    versions["python"] = platform.python_version()
    return versions


def git_state(path: Path | None = None) -> GitState | None:
    """The commit checked out at `path` (default: the nerplat source) and whether it is dirty.

    None when `path` is not in a git working tree or git is unavailable (an installed wheel,
    a container image without .git).
    """
    path = path or Path(__file__).resolve().parent
    try:
        commit = _git(path, "rev-parse", "HEAD")
        changes = _git(path, "status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return None
    return GitState(commit=commit, dirty=bool(changes))


def environment_report() -> dict:
    """Everything above as one JSON-serialisable dict (the environment.json artifact)."""
    state = git_state()
    return {
        "packages": package_versions(),
        "platform": platform.platform(),
        "git": None if state is None else {"commit": state.commit, "dirty": state.dirty},
    }


def _git(path: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(path), *args], capture_output=True, text=True, timeout=10, check=True
    )
    return done.stdout.strip()
