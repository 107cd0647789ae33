"""A local store packed into one tarball and unpacked in another folder, where `nerplat run --resume`
continues it: a registered study split between sessions (`--through-look K`, then look K + 1 on
another day, on a fresh machine) keeps its earlier looks' runs, not a retrained copy of them.

    python -m nerplat.track.store_archive pack WORKDIR TARBALL
    python -m nerplat.track.store_archive unpack TARBALL WORKDIR

docs/results/reproduce.sh keeps the tarball beside the report (`store.tar.gz`) and continues from it
(`--continue`). What the resume reads is packed: `mlflow.db` (runs, params, tags, metrics with
MLflow's own timestamps, which analysis/evidence.py dates a claim's first test evaluation by),
`optuna.db` when arms were tuned (their studies), and `mlartifacts/` (the summary run's plan.json,
which the resume and the analysis read; each run's predictions, data checksums and notes). Left out:
`.nerplat/` (Ray Tune's trial folders and checkpoints: a resume removes them before each Tuner,
its state is in MLflow), `reports/` (rewritten from the runs) and the logged models' files (a
MiniLM is about 90 MB per arm: a report folder would carry hundreds of MB; no resume, analysis or
claim reads them, so a registered version of an earlier look names files that are not there).

MLflow records artifact locations as absolute paths (experiments, runs, logged models, model
versions), the old folder's. Unpacking rewrites every stored text that names a place under the old
`mlartifacts/` to the same place under the new one, in whatever table holds it (MLflow 3 added
logged models; a list of columns would miss the next such table). Left as they were, the resume
would read plan.json from a folder that is not there, the next look's runs would write their
artifacts outside the new store (and the next pack would miss them), and the best-model rule would
delete superseded models' files at the old path. Unpacking into the old path instead would need
that path free on the new machine, and could not be tried beside the original on the same one.
Nothing else is changed: run and metric timestamps stay MLflow's.
"""

from __future__ import annotations

import argparse
import io
import json
import sqlite3
import sys
import tarfile
from contextlib import closing
from pathlib import Path

from nerplat.errors import UserInputError
from nerplat.track.store import ARTIFACTS_DIR_NAME, DEFAULT_DB_NAME
from nerplat.track.studies import DEFAULT_DB_NAME as OPTUNA_DB_NAME

MANIFEST = "store.json"  # in the tarball: where the store was (its artifact root)
_FILE_URI = "file://"


def pack(workdir: Path, tarball: Path) -> None:
    """`workdir`'s store (module docstring: what is packed) into `tarball`, written whole or not at all."""
    workdir = workdir.resolve()
    database = workdir / DEFAULT_DB_NAME
    if not database.is_file():
        raise UserInputError(f"no MLflow store at {database}: nothing to pack")
    artifacts = workdir / ARTIFACTS_DIR_NAME
    manifest = json.dumps({"artifact_root": str(artifacts)}, indent=2).encode()
    partial = tarball.with_name(f".{tarball.name}.partial")
    try:
        with tarfile.open(partial, "w:gz") as archive:
            entry = tarfile.TarInfo(MANIFEST)
            entry.size = len(manifest)
            archive.addfile(entry, io.BytesIO(manifest))
            for name in (DEFAULT_DB_NAME, OPTUNA_DB_NAME):
                if (workdir / name).is_file():
                    archive.add(workdir / name, name)
            if artifacts.is_dir():
                archive.add(artifacts, ARTIFACTS_DIR_NAME, filter=_without(_logged_model_folders(database, workdir)))
        partial.replace(tarball)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise


def unpack(tarball: Path, workdir: Path) -> int:
    """The store of `tarball` into `workdir` (which holds no store yet), its artifact locations moved
    there; returns how many stored values were moved."""
    workdir = workdir.resolve()
    if (workdir / DEFAULT_DB_NAME).exists():
        raise UserInputError(f"{workdir} already holds an MLflow store: unpack into a fresh folder")
    with tarfile.open(tarball, "r:gz") as archive:
        manifest = json.loads(archive.extractfile(MANIFEST).read())
        members = [member for member in archive.getmembers() if member.name != MANIFEST]
        archive.extractall(workdir, members=members, filter="data")
    return move_artifact_root(workdir / DEFAULT_DB_NAME, manifest["artifact_root"], str(workdir / ARTIFACTS_DIR_NAME))


def move_artifact_root(database: Path, old: str, new: str) -> int:
    """Every text value in `database` naming `old` or a place under it (a path or a file:// URI) made
    to name the same place under `new`; returns how many values changed."""
    moved = 0
    with closing(sqlite3.connect(database)) as connection, connection:
        tables = [row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        for table in tables:
            for column in [row[1] for row in connection.execute(f'PRAGMA table_info("{table}")')]:
                for before, after in ((old, new), (_FILE_URI + old, _FILE_URI + new)):
                    moved += connection.execute(
                        f'UPDATE "{table}" SET "{column}" = :after || substr("{column}", :tail) '
                        f'WHERE typeof("{column}") = \'text\' AND substr("{column}", 1, :length) = :before '
                        f'AND substr("{column}", :tail, 1) IN (\'\', \'/\')',
                        {"before": before, "after": after, "length": len(before), "tail": len(before) + 1},
                    ).rowcount
    return moved


def _logged_model_folders(database: Path, workdir: Path) -> list[str]:
    """The folders of the store's logged models (their weights) in `workdir`, relative to it as the
    tarball names them; none before MLflow 3, which added logged models."""
    with closing(sqlite3.connect(database)) as connection:
        if not connection.execute("SELECT 1 FROM sqlite_master WHERE name = 'logged_models'").fetchone():
            return []
        rows = connection.execute("SELECT artifact_location FROM logged_models").fetchall()
    folders = [Path(location.removeprefix(_FILE_URI)) for (location,) in rows if location]
    return [folder.relative_to(workdir).as_posix() for folder in folders if folder.is_relative_to(workdir)]


def _without(folders: list[str]):
    """A tarfile filter leaving out the members in `folders` (as the tarball names them)."""
    prefixes = tuple(f"{folder}/" for folder in folders)
    return lambda member: None if f"{member.name}/".startswith(prefixes) else member


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m nerplat.track.store_archive", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    packing = commands.add_parser("pack", help="WORKDIR's store into TARBALL")
    packing.add_argument("workdir", type=Path)
    packing.add_argument("tarball", type=Path)
    unpacking = commands.add_parser("unpack", help="TARBALL's store into WORKDIR, its artifact locations moved there")
    unpacking.add_argument("tarball", type=Path)
    unpacking.add_argument("workdir", type=Path)
    args = parser.parse_args(argv)
    try:
        if args.command == "pack":
            pack(args.workdir, args.tarball)
        else:
            moved = unpack(args.tarball, args.workdir)
            print(f"unpacked {args.tarball} into {args.workdir.resolve()}; {moved} artifact locations moved there")
    except UserInputError as error:
        print(f"error: {error}", file=sys.stderr)
        return UserInputError.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main())
