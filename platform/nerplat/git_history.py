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
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path

GIT_TIMEOUT_S = 30


def committed_at(path: Path) -> datetime | None:
    """The committer date (timezone-aware) of the oldest commit holding `path` as it is now; None when
    the present text is not committed, or `path` is not in a git repository (or git is missing)."""
    return committed_dates([path])[Path(path).resolve()]


def committed_dates(paths: Iterable[Path]) -> dict[Path, datetime | None]:
    """`committed_at` of each of `paths`, keyed by its resolved path, with two git processes per folder
    (the analysis dates every registration of a folder at once): one hashes the present texts, one
    lists the commits that changed the files, oldest first, with the version each commit left. In a
    history with merges a commit is read where git's log of the folder's files shows it, which can
    differ from the log of one file alone only when two merged branches each wrote the same text."""
    dates: dict[Path, datetime | None] = {}
    folders: dict[Path, list[str]] = {}
    for path in (Path(p).resolve() for p in paths):
        dates[path] = None
        if path.is_file():
            folders.setdefault(path.parent, []).append(path.name)
    for folder, names in folders.items():
        present = _git(folder, "hash-object", "--", *names)
        if present is None:
            continue
        wanted = dict(zip(names, present.split()))
        for name, date in _first_commits_of(folder, wanted).items():
            dates[folder / name] = date
    return dates


def _first_commits_of(folder: Path, blobs: dict[str, str]) -> dict[str, datetime]:
    """The date of the oldest commit that left each file of `folder` (name: blob id) with that blob."""
    log = _git(folder, "log", "--reverse", "--format=%H %cI", "--raw", "--no-abbrev", "--no-renames", "-z",
               "--diff-merges=first-parent", "--relative", "--", *blobs, strip=False)
    found: dict[str, datetime] = {}
    fields = iter((log or "").split("\0"))
    date = None
    for field in fields:
        field = field.strip()
        if field.startswith(":"):  # ":old_mode new_mode old_blob new_blob status", then the file's name
            name, blob = next(fields, ""), field.split()[3]
            if date is not None and blobs.get(name) == blob and name not in found:
                found[name] = date
        elif field:  # a commit: "<hash> <committer date>"
            date = datetime.fromisoformat(field.partition(" ")[2])
    return found


def committed_texts(path: Path) -> list[str]:
    """The text of `path` in every commit that changed it, oldest first (deleted versions left out);
    [] outside a git repository. Two git processes whatever the history's length: the log lists the
    blob each commit left, one `cat-file --batch` reads them all."""
    path = Path(path).resolve()
    log = _git(path.parent, "log", "--reverse", "--format=", "--raw", "--no-abbrev", "--no-renames", "--", path.name)
    # each line ":old_mode new_mode old_blob new_blob status\tname"; a deletion leaves the zero blob
    changes = (line.split() for line in (log or "").splitlines() if line.startswith(":"))
    blobs = [fields[3] for fields in changes if fields[3].strip("0")]
    batch = _git_bytes(path.parent, "cat-file", "--batch", given="".join(f"{blob}\n" for blob in blobs).encode())
    texts, at = [], 0
    while batch and at < len(batch):  # "<blob> blob <size>\n<size bytes>\n" per blob, in the order asked
        header_end = batch.index(b"\n", at)
        size = int(batch[at:header_end].split()[2])
        texts.append(batch[header_end + 1 : header_end + 1 + size].decode("utf-8", errors="replace"))
        at = header_end + 1 + size + 1
    return texts


def _git(folder: Path, *arguments: str, strip: bool = True) -> str | None:
    """git's output in `folder` (stripped unless asked not to), or None when git fails or is missing."""
    output = _git_bytes(folder, *arguments)
    if output is None:
        return None
    text = output.decode("utf-8", errors="replace")
    return text.strip() if strip else text


def _git_bytes(folder: Path, *arguments: str, given: bytes = b"") -> bytes | None:
    """git's raw output in `folder` with `given` on its input, or None when git fails or is missing."""
    try:
        done = subprocess.run(
            ["git", "-C", str(folder), *arguments], input=given, capture_output=True, timeout=GIT_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None
