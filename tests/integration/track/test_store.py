"""`check_store` from several fresh driver processes at once (each imports nerplat and MLflow)."""

import subprocess
import sys

import pytest


@pytest.mark.slow
def test_fresh_drivers_creating_one_new_sqlite_store_at_once_all_succeed(tmp_path):
    database = tmp_path / "new" / "mlflow.db"
    code = f"from nerplat.track.store import check_store; check_store('sqlite:///{database}'); print('ok')"
    workers = [
        subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for _ in range(3)
    ]
    outputs = [worker.communicate(timeout=300)[0] for worker in workers]
    assert [worker.returncode for worker in workers] == [0, 0, 0], outputs
    assert (tmp_path / "new" / "mlflow.db.lock").exists()
