"""MLflow's production layout (cluster/base: `mlflow server` on PostgreSQL) under concurrent writers.

A throwaway PostgreSQL cluster (`nerplat.track.local_postgres`) backs a real `mlflow server`
(SQLAlchemy 2.1 reaches `postgresql://` through psycopg 3). Several processes log at once through nerplat's `ExperimentTracker`,
as Ray trials do on the cluster: each logs its own trial runs (params, per-epoch metrics, status),
and all of them race to create the same shared trial runs. Afterwards every run exists exactly once,
with every param and every epoch's metrics exactly once.
"""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from host_load import scaled

from nerplat.loopback import free_port

pytestmark = pytest.mark.slow

WRITERS = 4
OWN_TRIALS = 3
EPOCHS = 3
SHARED_TRIALS = 3
ARM = "a/full/ce"


@pytest.fixture
def postgres_uri():
    """A PostgreSQL server of our own, from the newest installed server binaries."""
    from nerplat.track.local_postgres import INSTALL_HINT, LocalPostgres, installed_postgres_bins

    found = installed_postgres_bins()
    if not found:
        pytest.fail(f"PostgreSQL server binaries (initdb, pg_ctl) not found: {INSTALL_HINT}")
    with LocalPostgres(found[0]) as uri:
        yield uri


@contextlib.contextmanager
def running_mlflow(arguments: list[str], log_path: Path, env: dict[str, str] | None = None):
    """`mlflow server ARGUMENTS` on 127.0.0.1 and a free port; yields its URL once /health answers,
    stops it through the process group it leads."""
    import requests

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    command = [str(Path(sys.executable).parent / "mlflow"), "server", *arguments, "--host", "127.0.0.1", "--port", str(port)]
    with log_path.open("w") as log:
        server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=env)
    try:
        deadline = time.monotonic() + scaled(180)
        while True:
            if server.poll() is not None:
                pytest.fail(f"mlflow server exited with {server.returncode}:\n{log_path.read_text()[-3000:]}")
            try:
                if requests.get(f"{url}/health", timeout=2).status_code == 200:
                    break
            except (requests.ConnectionError, requests.Timeout):  # not up yet, or busy starting
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"mlflow server not healthy after 180 s:\n{log_path.read_text()[-3000:]}")
            time.sleep(1)
        yield url
    finally:
        stop_group(server)


@pytest.fixture
def mlflow_server(postgres_uri: str, tmp_path: Path):
    """`mlflow server` on the PostgreSQL store."""
    arguments = ["--backend-store-uri", postgres_uri, "--artifacts-destination", str(tmp_path / "artifacts"), "--workers", "2"]
    with running_mlflow(arguments, tmp_path / "mlflow-server.log") as url:
        yield url


def stop_group(process: subprocess.Popen) -> None:
    """SIGTERM, then SIGKILL, to the process group `process` leads (started with start_new_session)."""
    for sig, grace in ((signal.SIGTERM, 10), (signal.SIGKILL, 30)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue


WRITER = """\
import json, pickle, sys, time
from pathlib import Path

tracker_file, arm_run_id, writer, folder, setup = sys.argv[1:]
writer, folder, setup = int(writer), Path(folder), json.loads(setup)
tracker = pickle.loads(Path(tracker_file).read_bytes())
tracker.client  # connect before the start signal, so the writers really race
(folder / f"ready-{writer}").touch()
while not (folder / "go").exists():
    time.sleep(0.01)
for shared in range(setup["shared"]):
    run = tracker.start_trial_run(arm_run_id, setup["arm"], f"shared-{shared}", params={"lr": 0.001})
    print("shared", shared, run.run_id, flush=True)
for trial in range(setup["own"]):
    run = tracker.start_trial_run(arm_run_id, setup["arm"], f"w{writer}-t{trial}", params={"writer": writer, "trial": trial})
    for epoch in range(setup["epochs"]):
        metrics = {"dev_micro_f1": writer + trial / 10 + epoch / 100, "train_loss": 1.0 / (epoch + 1)}
        tracker.log_epoch(run.run_id, metrics, epoch)
    tracker.finish(run.run_id, "completed")
"""


def test_concurrent_writers_lose_and_duplicate_nothing(mlflow_server: str, tmp_path: Path):
    from mlflow import MlflowClient
    from mlflow.entities import ViewType

    from nerplat.track import schema
    from nerplat.run_keys import trial_run_key
    from nerplat.track.experiment_tracker import ExperimentTracker

    tracker = ExperimentTracker.open(mlflow_server, "pg-concurrency", timeout=30)
    arm = tracker.start_arm_run(ARM, "tune")
    (tmp_path / "tracker.pkl").write_bytes(pickle.dumps(tracker))
    (tmp_path / "writer.py").write_text(WRITER)
    setup = json.dumps({"arm": ARM, "shared": SHARED_TRIALS, "own": OWN_TRIALS, "epochs": EPOCHS})
    writers = [
        subprocess.Popen(
            [sys.executable, str(tmp_path / "writer.py"), str(tmp_path / "tracker.pkl"), arm.run_id, str(i), str(tmp_path),
             setup],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        for i in range(WRITERS)
    ]
    started = time.monotonic()
    while len(list(tmp_path.glob("ready-*"))) < WRITERS:
        assert all(w.poll() is None for w in writers), [w.communicate() for w in writers]
        assert time.monotonic() - started < scaled(180), "writers did not start"
        time.sleep(0.05)
    (tmp_path / "go").touch()
    racing = time.monotonic()
    outputs = [writer.communicate(timeout=300) for writer in writers]
    print(f"writers ready after {racing - started:.1f} s, logged in {time.monotonic() - racing:.1f} s")
    for writer, (_out, err) in zip(writers, outputs):
        assert writer.returncode == 0, err[-3000:]

    # Every writer that asked for a shared trial got the same run.
    shared_ids: dict[str, set[str]] = {}
    for out, _ in outputs:
        for line in out.splitlines():
            _, index, run_id = line.split()
            shared_ids.setdefault(index, set()).add(run_id)
    assert all(len(ids) == 1 for ids in shared_ids.values()), shared_ids

    client = MlflowClient(mlflow_server)
    children = client.search_runs(
        [tracker.experiment_id], filter_string="tags.`nerplat.kind` = 'trial'", run_view_type=ViewType.ACTIVE_ONLY,
        max_results=1000,
    )  # fmt: skip
    keys = sorted(run.data.tags[schema.RUN_KEY] for run in children)
    expected = sorted(
        [trial_run_key(ARM, f"shared-{s}") for s in range(SHARED_TRIALS)]
        + [trial_run_key(ARM, f"w{w}-t{t}") for w in range(WRITERS) for t in range(OWN_TRIALS)]
    )
    assert keys == expected  # none lost, none twice
    by_id = {run.info.run_id: run for run in children}
    assert {next(iter(ids)) for ids in shared_ids.values()} <= set(by_id)

    for run in children:
        if "writer" not in run.data.params:
            continue
        writer, trial = int(run.data.params["writer"]), int(run.data.params["trial"])
        assert run.info.status == "FINISHED" and run.data.tags["nerplat.status"] == "completed"
        history = client.get_metric_history(run.info.run_id, "dev_micro_f1")
        assert sorted(point.step for point in history) == list(range(EPOCHS))
        assert all(abs(p.value - (writer + trial / 10 + p.step / 100)) < 1e-9 for p in history)
        assert len(client.get_metric_history(run.info.run_id, "train_loss")) == EPOCHS


def test_the_basic_auth_app_of_cluster_base_admits_only_the_secrets_account(postgres_uri: str, tmp_path: Path):
    """cluster/base/mlflow.yaml's auth settings, run as the Deployment runs them (issue 11, item 15):
    users in PostgreSQL with the password from PGPASSWORD, the admin from the Secret's keys."""
    import requests
    from mlflow import MlflowClient
    from repo_paths import CLUSTER

    from nerplat.cluster.kustomize import build

    objects = {(m.kind, m.body["metadata"]["name"]): m.body for m in build(CLUSTER / "base")}
    (container,) = objects["Deployment", "nerplat-mlflow"]["spec"]["template"]["spec"]["containers"]
    ini = objects["ConfigMap", "nerplat-mlflow-auth"]["data"]["basic_auth.ini"]
    user_password, address = postgres_uri.removeprefix("postgresql://mlflow:").split("@")
    (tmp_path / "basic_auth.ini").write_text(ini.replace("@nerplat-postgres:5432/", f"@{address.split('/')[0]}/"))
    secret_values = {("nerplat-postgres", "password"): user_password,
                     ("nerplat-mlflow-csrf", "secret_key"): secrets.token_hex(16),
                     ("nerplat-mlflow-auth", "MLFLOW_TRACKING_USERNAME"): "nerplat",
                     ("nerplat-mlflow-auth", "MLFLOW_TRACKING_PASSWORD"): "s3cret-from-the-secret"}
    env = dict(os.environ, MLFLOW_AUTH_CONFIG_PATH=str(tmp_path / "basic_auth.ini"))
    for entry in container["env"]:  # every Secret the Deployment hands over, under the names it uses
        if "secretKeyRef" in entry.get("valueFrom", {}):
            env[entry["name"]] = secret_values[
                entry["valueFrom"]["secretKeyRef"]["name"], entry["valueFrom"]["secretKeyRef"]["key"]
            ]
    app = [a for a in container["args"] if a.startswith("--app-name")]
    assert app == ["--app-name=basic-auth"]
    arguments = [
        *app, "--backend-store-uri", postgres_uri, "--artifacts-destination", str(tmp_path / "artifacts"), "--workers", "1"
    ]
    with running_mlflow(arguments, tmp_path / "mlflow-auth.log", env) as url:
        search = f"{url}/api/2.0/mlflow/experiments/search?max_results=1"
        assert requests.get(search, timeout=30).status_code == 401
        assert requests.get(search, auth=("nerplat", "wrong"), timeout=30).status_code == 401
        assert requests.get(search, auth=("nerplat", "s3cret-from-the-secret"), timeout=30).status_code == 200
        os.environ.update(MLFLOW_TRACKING_USERNAME="nerplat", MLFLOW_TRACKING_PASSWORD="s3cret-from-the-secret")
        try:  # as the Ray pods log in: the Secret's keys as environment variables
            experiment_id = MlflowClient(url).create_experiment("behind-basic-auth")
            assert MlflowClient(url).get_experiment(experiment_id).name == "behind-basic-auth"
        finally:
            os.environ.pop("MLFLOW_TRACKING_USERNAME")
            os.environ.pop("MLFLOW_TRACKING_PASSWORD")


def test_the_optuna_studies_live_in_the_database_the_cluster_creates_for_them(postgres_uri: str, tmp_path: Path, monkeypatch):
    """cluster/base: PostgreSQL's init script creates the role and database `optuna`; the Ray head's
    driver, with the ConfigMap's URL and the Secret's PGPASSWORD only, keeps a study there, and
    optuna-dashboard (as cluster/README.md step 6 runs it, through a port-forward) shows it."""
    import optuna
    from repo_paths import CLUSTER

    from nerplat.cluster.kustomize import build
    from nerplat.run.study import ArmStudy, prepare_study
    from nerplat.track.studies import OPTUNA_STORAGE_ENV, open_optuna_storage, resolve_optuna_storage
    from nerplat.local_servers import LocalOptunaDashboard

    objects = {(m.kind, m.body["metadata"]["name"]): m.body for m in build(CLUSTER / "base")}
    script = tmp_path / "optuna.sh"
    script.write_text(objects["ConfigMap", "nerplat-postgres-init"]["data"]["optuna.sh"])
    admin_password, address = postgres_uri.removeprefix("postgresql://mlflow:").split("@")
    host, port = address.split("/")[0].split(":")
    optuna_password = secrets.token_hex(24)  # as `openssl rand -hex 24` makes the Secret's
    as_entrypoint = dict(os.environ, PGHOST=host, PGPORT=port, PGPASSWORD=admin_password, POSTGRES_USER="mlflow",
                         POSTGRES_DB="mlflow", OPTUNA_PASSWORD=optuna_password)
    result = subprocess.run(["sh", str(script)], env=as_entrypoint, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr

    settings = objects["ConfigMap", "nerplat-settings"]["data"][OPTUNA_STORAGE_ENV]
    monkeypatch.setenv(OPTUNA_STORAGE_ENV, settings.replace("@nerplat-postgres:5432/", f"@{host}:{port}/"))
    monkeypatch.setenv("PGPASSWORD", optuna_password)
    monkeypatch.setenv("PGUSER", "someone-else")  # restored afterwards; the URL's user replaces it
    url = resolve_optuna_storage(None, "http://nerplat-mlflow:5000", tmp_path)
    assert url == f"postgresql://{host}:{port}/optuna" and os.environ["PGUSER"] == "optuna"
    study = ArmStudy(open_optuna_storage(url), "mom_conll/conll2003/full/mom")
    prepare_study(study, owner="tune-run", metric="dev_best_micro_f1", mode="max",
                  distributions={"objective.lambda": optuna.distributions.FloatDistribution(0.0, 1.0)})
    assert optuna.load_study(study_name=study.name, storage=url).user_attrs["nerplat.tune_run_id"] == "tune-run"

    with LocalOptunaDashboard(url) as dashboard:
        assert [name for name, _ in dashboard.studies()] == [study.name]
