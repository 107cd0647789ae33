"""The report folder: a report replaces only the files it wrote there itself.

Each report folder carries a manifest, `.nerplat-report.json`, listing the files of the last report
written into it (and what that report was built from, `report_inputs`). A new report replaces
exactly those files and leaves everything else alone (a user's notes beside the tables); a
non-empty folder without a manifest is not a report folder and is refused before anything is
written, so `--out .` in a workdir can never delete `mlflow.db`, and `--out ~/paper` never deletes
the paper. Folders are made with `mkdir`, so they follow the umask.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nerplat.errors import Problem, UserInputError

MANIFEST = ".nerplat-report.json"


def owned_files(out_dir: Path) -> list[str]:
    """Paths (relative, POSIX) of the files the last report wrote into `out_dir`; [] for a new or
    empty folder. UserInputError for a file, or a non-empty folder that no report wrote."""
    if not out_dir.exists():
        return []
    if not out_dir.is_dir():
        raise UserInputError(Problem(f"{out_dir} is a file, not a folder: give --out a new or empty folder", path="--out"))
    manifest = out_dir / MANIFEST
    if manifest.is_file():
        return _read_manifest(manifest, out_dir)
    if any(out_dir.iterdir()):
        raise UserInputError(
            Problem(
                f"{out_dir} is not empty and has no {MANIFEST}, so no nerplat report was written there; "
                "nothing was changed: give --out a new or empty folder (or the folder of an earlier report)",
                path="--out",
            )
        )
    return []


def _read_manifest(manifest: Path, out_dir: Path) -> list[str]:
    try:
        files = json.loads(manifest.read_text(encoding="utf-8"))["files"]
        if not isinstance(files, list) or not all(isinstance(name, str) for name in files):
            raise TypeError("'files' is not a list of paths")
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise UserInputError(
            Problem(f"not a report manifest ({error}): remove it or give --out another folder", source=str(manifest))
        ) from None
    root = out_dir.resolve()
    for name in files:
        if not _is_inside(root, name):
            raise UserInputError(Problem(
                f"lists '{name}', which is outside the report folder: remove the manifest or give --out another folder",
                source=str(manifest),
            ))
    return files


def _is_inside(root: Path, name: str) -> bool:
    path = Path(name)
    return bool(name) and not path.is_absolute() and ".." not in path.parts and (root / path).resolve().is_relative_to(root)


def install(built: Path, out_dir: Path, previous: list[str], record: Mapping[str, Any] | None = None) -> list[Path]:
    """Moves every file of the freshly built folder `built` into `out_dir`, deletes the files of the
    previous report (`previous`, from `owned_files`) that the new one lacks, and records the new list,
    with `record` (what the report was built from, `report_inputs`) once every file is in place.

    Refuses (UserInputError, nothing moved) when a new file would overwrite one no report wrote.
    Returns the files installed.
    """
    new = refuse_clashes(built, out_dir, previous)
    out_dir.mkdir(parents=True, exist_ok=True)
    _write_manifest(out_dir, sorted(set(previous) | set(new)))  # a crash half-way still knows which files are ours
    for name in new:
        (out_dir / name).parent.mkdir(parents=True, exist_ok=True)
        os.replace(built / name, out_dir / name)
    for name in sorted(set(previous) - set(new)):
        (out_dir / name).unlink(missing_ok=True)
        _remove_emptied_folders(out_dir, (out_dir / name).parent)
    _write_manifest(out_dir, new, record)
    return [out_dir / name for name in new]


def report_record(out_dir: Path) -> dict[str, Any]:
    """What the manifest of `out_dir` says of its report besides its files ({} without one)."""
    try:
        manifest = json.loads((out_dir / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {key: value for key, value in manifest.items() if key != "files"} if isinstance(manifest, dict) else {}


def refuse_clashes(built: Path, out_dir: Path, previous: list[str]) -> list[str]:
    """The files of `built` (relative paths); UserInputError when one would overwrite a file of
    `out_dir` that no report wrote."""
    new = sorted(p.relative_to(built).as_posix() for p in built.rglob("*") if p.is_file())
    root = out_dir.resolve()
    clashes = [
        name for name in new
        if (name not in previous and os.path.lexists(out_dir / name)) or not _is_inside(root, name)  # a symlink out
    ]
    if clashes:
        raise UserInputError(
            Problem(
                f"{out_dir} already holds {', '.join(clashes)}, not written by a nerplat report; nothing was changed: "
                "move them away or give --out another folder",
                path="--out",
            )
        )
    return new


def _remove_emptied_folders(out_dir: Path, folder: Path) -> None:
    """Removes `folder` and its parents below `out_dir` while they are empty."""
    while folder != out_dir and out_dir in folder.parents:
        try:
            folder.rmdir()
        except OSError:  # not empty (a user's file) or already gone
            return
        folder = folder.parent


def _write_manifest(out_dir: Path, files: list[str], record: Mapping[str, Any] | None = None) -> None:
    """Written to a temporary file, then renamed: a reader sees the old list or the new one."""
    temporary = out_dir / f"{MANIFEST}.tmp"
    temporary.write_text(json.dumps({"files": files, **(record or {})}, indent=1) + "\n", encoding="utf-8")
    os.replace(temporary, out_dir / MANIFEST)
