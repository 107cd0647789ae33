"""What git's history says of a file: when it was first committed as it is now (the date a
registration, `analysis.registrations`, was made, which the analysis holds against MLflow's
timestamps of the runs' test evaluations), and its earlier committed versions (the units earlier
registrations of a claim held).

The only module that runs `git` for them. The date is the committer date of the oldest commit
whose version of the file is byte for byte the file in the working tree: a registration replaced
later (`nerplat claims register --replace`) dates from the commit that brought its present text,
and a file edited since its last commit has no date (None), as has one never committed or one
outside a git repository. Committer dates can be set by whoever commits; what they show is what
the repository's history says, which a reviewer can check against the pushes.
"""

from __future__ import annotations

import subprocess
from datetime import datetime
from pathlib import Path

GIT_TIMEOUT_S = 30


def committed_at(path: Path) -> datetime | None:
    """The committer date (timezone-aware) of the oldest commit holding `path` as it is now; None when
    the present text is not committed, or `path` is not in a git repository (or git is missing)."""
    path = Path(path).resolve()
    if not path.is_file():
        return None
    folder = path.parent
    present = _git(folder, "hash-object", "--", path.name)
    history = _git(folder, "log", "--format=%H %cI", "--reverse", "--", path.name)
    if present is None or not history:
        return None
    for line in history.splitlines():
        commit, _, date = line.partition(" ")
        if _git(folder, "rev-parse", "--verify", "--quiet", f"{commit}:./{path.name}") == present:
            return datetime.fromisoformat(date)
    return None


def committed_texts(path: Path) -> list[str]:
    """The text of `path` in every commit that changed it, oldest first (deleted versions left out);
    [] outside a git repository."""
    path = Path(path).resolve()
    history = _git(path.parent, "log", "--format=%H", "--reverse", "--", path.name)
    texts = [_git(path.parent, "show", f"{commit}:./{path.name}", strip=False) for commit in (history or "").split()]
    return [text for text in texts if text is not None]


def _git(folder: Path, *arguments: str, strip: bool = True) -> str | None:
    """git's output in `folder` (stripped unless asked not to), or None when git fails or is missing."""
    try:
        done = subprocess.run(
            ["git", "-C", str(folder), *arguments], capture_output=True, text=True, timeout=GIT_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    return done.stdout.strip() if strip else done.stdout
