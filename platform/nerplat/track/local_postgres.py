"""A throwaway PostgreSQL cluster on 127.0.0.1: the store behind `mlflow server` in cluster/base, run
locally for `nerplat bench tracking --postgres-bin` and for the tests of that layout.

Debian keeps the server binaries (`initdb`, `pg_ctl`, `createdb`) off PATH, under
/usr/lib/postgresql/<major>/bin (`make postgres` installs them). PostgreSQL refuses to run as root,
so as root the cluster runs as the `postgres` user, in a fresh /tmp folder that user can reach
(pytest's tmp_path and most home folders are private to root).
"""

from __future__ import annotations

import glob
import os
import secrets
import shutil
import subprocess
import tempfile
from pathlib import Path

from nerplat.errors import Problem, UserInputError
from nerplat.loopback import free_port

INSTALL_HINT = "install Debian's postgresql package (`make postgres`, or `apt-get install -y postgresql`)"
DATABASE = "mlflow"
USER = "mlflow"


def installed_postgres_bins() -> list[Path]:
    """Folders holding initdb and pg_ctl: PATH first, then Debian's, newest major version first."""
    on_path = shutil.which("initdb")
    debian = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(Path(p).parent.name), reverse=True)
    candidates = ([Path(on_path).resolve().parent] if on_path else []) + [Path(p) for p in debian]
    return [folder for folder in candidates if _has_server_binaries(folder)]


def check_postgres_bin(folder: Path, flag: str = "--postgres-bin") -> Path:
    """`folder` if it holds the server binaries; else UserInputError naming the folders that do."""
    if _has_server_binaries(folder):
        return folder
    found = installed_postgres_bins()
    where = f"found them in {', '.join(map(str, found))}" if found else INSTALL_HINT
    raise UserInputError(Problem(f"{folder} has no initdb, pg_ctl and createdb: {where}", path=flag))


def _has_server_binaries(folder: Path) -> bool:
    return all((folder / name).is_file() for name in ("initdb", "pg_ctl", "createdb"))


class LocalPostgres:
    """A PostgreSQL cluster of its own (fresh data folder, free port, password login); use as a
    context manager, which yields the `postgresql://` URI of its `mlflow` database."""

    def __init__(self, bin_dir: Path, max_connections: int = 200):
        self.bin_dir = Path(bin_dir)
        self.max_connections = max_connections
        self.root: Path | None = None
        self.port = 0

    def start(self) -> str:
        as_root = os.geteuid() == 0
        self.root = Path(tempfile.mkdtemp(prefix="nerplat-pg-"))
        data, password, self.port = self.root / "data", secrets.token_hex(16), free_port()
        password_file = self.root / "pwfile"
        password_file.write_text(password + "\n")
        if as_root:
            shutil.chown(self.root, "postgres")
            shutil.chown(password_file, "postgres")
        try:
            self._run("initdb", "-D", str(data), "-U", USER, "--auth=scram-sha-256", f"--pwfile={password_file}")
            options = f"-h 127.0.0.1 -p {self.port} -k '' -c max_connections={self.max_connections}"
            self._run("pg_ctl", "-D", str(data), "-l", str(self.root / "server.log"), "-o", options, "-w", "start")
            self._run("createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", USER, DATABASE, env={"PGPASSWORD": password})
        except BaseException:
            self.stop()
            raise
        return f"postgresql://{USER}:{password}@127.0.0.1:{self.port}/{DATABASE}"

    def stop(self) -> None:
        root, self.root = self.root, None
        if root is None:
            return
        if (root / "data" / "postmaster.pid").exists():
            subprocess.run([*self._as_owner(), str(self.bin_dir / "pg_ctl"), "-D", str(root / "data"), "-m", "immediate", "stop"],
                           capture_output=True, timeout=60)  # fmt: skip
        shutil.rmtree(root, ignore_errors=True)

    def _as_owner(self) -> list[str]:
        return ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []

    def _run(self, program: str, *args: str, env: dict[str, str] | None = None) -> None:
        command = [*self._as_owner(), str(self.bin_dir / program), *args]
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, env={**os.environ, **(env or {})})
        if done.returncode != 0:
            raise RuntimeError(f"{program} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")

    def __enter__(self) -> str:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
