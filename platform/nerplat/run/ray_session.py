"""The driver's Ray session: the environment it sets and forwards, connecting to (or starting) Ray,
how many trials fit the cluster, and stopping on Ctrl-C or SIGTERM.

`TuneDriver` (run/tune_driver.py) and `ExperimentRunner` (run/runner.py) use these; nothing here knows
about arms' phases or MLflow runs.
"""

from __future__ import annotations

import logging
import math
import os
import signal
import threading
from typing import Any

from nerplat.plan.model import Arm
from nerplat.plugins import ray_runtime_env
from nerplat.run.allocator import worker_preload
from nerplat.run.ray_preflight import joining_problem
from nerplat.run.ray_reaper import stop_with_this_process
from nerplat.track.store import tracking_logger

# Ray's own console output would fight the progress view; its result loggers (CSV, JSON,
# TensorBoard per trial) cost disk across thousands of trials and MLflow has it all. Set by
# `ExperimentRunner.run` (not on import), unless the user set them.
RAY_SETTINGS = {
    "RAY_AIR_NEW_OUTPUT": "0",
    "TUNE_DISABLE_AUTO_CALLBACK_LOGGERS": "1",
    "RAY_CHDIR_TO_TRIAL_DIR": "0",
    "TUNE_DISABLE_SIGINT_HANDLER": "0",
    # The driver's own MLflow calls: one quick retry, then `PatientClient` (track/store.py) takes over
    # with a visible message per attempt instead of MLflow's silent four-minute backoff.
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "1",
    "MLFLOW_HTTP_REQUEST_TIMEOUT": "20",
}

# Passed to every Ray worker, so trials find corpora, caches and the store as the driver does.
# Not MLFLOW_TRACKING_URI: trials get the URI without credentials from the runner
# (nerplat.track.store), and Ray's runtime environment is readable by anyone on the cluster.
FORWARDED_ENV = (
    "NERPLAT_DATA",
    "NERPLAT_CACHE",
    "HF_HUB_OFFLINE",
    "TRANSFORMERS_OFFLINE",
    "HF_HOME",
    "TOKENIZERS_PARALLELISM",
    "MLFLOW_S3_ENDPOINT_URL",
    "RAY_CHDIR_TO_TRIAL_DIR",
    "NERPLAT_RAY_STORAGE",
)


class Interrupted(Exception):
    """The user stopped the run (Ctrl-C or SIGTERM); state is in MLflow and `--resume` continues."""


def treat_sigterm_as_ctrl_c() -> None:
    """SIGTERM (what Kubernetes sends) stops the run as Ctrl-C does: Tune ends its trials, their runs
    are marked interrupted. Replaces Ray's handler (`sys.exit` mid-step: a C++ stack dump, exit 134);
    so it is installed again after `ray.init`."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, lambda signum, frame: signal.raise_signal(signal.SIGINT))


def quiet_library_logs(verbose: bool) -> None:
    """Ray, Tune, Optuna and MLflow log routine steps at INFO/WARNING; the progress view says it better."""
    level = logging.INFO if verbose else logging.ERROR
    tracking_logger().setLevel(level)  # MLflow configures its loggers on import: set levels after it
    for name in ("ray", "ray.tune", "ray.train", "optuna", "alembic"):
        logging.getLogger(name).setLevel(level)
    # Tune logs a failed trial with Ray's whole traceback; the run prints the trial's own message instead
    # (run/events.py, in full, with its arm), and --verbose still shows the traceback.
    logging.getLogger("ray.tune.execution.tune_controller").setLevel(level if verbose else logging.CRITICAL)
    import optuna

    optuna.logging.set_verbosity(optuna.logging.INFO if verbose else optuna.logging.WARNING)


def connect_ray(address: str | None, verbose: bool, metrics_port: int | None = None, flag: str = "--address") -> str | None:
    """Embedded local Ray, reachable from this machine only, unless `address` names a running cluster
    (the `TuneDriver`'s `address`: --address, else RAY_ADDRESS; `flag` says which, for messages).
    Returns the Ray dashboard's URL (None when the cluster runs none).

    The embedded Ray is always a new cluster (`address="local"`): without it `ray.init` joins the
    cluster /tmp/ray/ray_current_cluster names (another user's `ray start`, or a stale file that
    makes it retry "Failed to connect to GCS" for ever). Joining one takes --address or RAY_ADDRESS.
    What Ray would report only as a timeout the run refuses before it writes anything
    (`run.ray_preflight.refuse_unusable_ray`).

    `metrics_port` is where the embedded Ray's metrics agent serves Prometheus (Ray's metrics and
    nerplat's, `run.exported_metrics`); a running cluster's nodes set theirs with `ray start
    --metrics-export-port`. The embedded cluster's processes end with this process, however it ends
    (`run.ray_reaper`); a running cluster's never."""
    import ray

    if ray.is_initialized():
        return None  # this process connected earlier (a test, a notebook) and printed the URL then

    env_vars = {name: os.environ[name] for name in FORWARDED_ENV if name in os.environ}
    plugins = ray_runtime_env()  # the user's plugin code, shipped to and imported on every worker
    kwargs: dict[str, Any] = {
        "runtime_env": {**plugins, "env_vars": {**env_vars, **plugins.get("env_vars", {})}},
        "log_to_driver": verbose,
        "logging_level": logging.INFO if verbose else logging.ERROR,
    }
    if address:
        try:
            return dashboard_url(ray.init(address=address, **kwargs))
        except (ConnectionError, RuntimeError, ValueError, ray.exceptions.RayError) as error:  # RayError: AuthenticationError
            raise joining_problem(address, flag, error) from None
    if metrics_port is not None:
        kwargs["_metrics_export_port"] = metrics_port
    kwargs["runtime_env"]["env_vars"].update(worker_preload(os.environ))  # a cluster's nodes choose their own
    # Every process of an embedded cluster (GCS, raylet, workers, agents) listens on loopback only:
    # Ray binds its servers to the node IP when that is loopback, and takes loopback as the node IP
    # while its multi-node switch is off (read by services.get_node_ip_address; the switch macOS and
    # Windows use, RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0, set here after import). `ray.init(
    # _node_ip_address="127.0.0.1")` cannot do it: Ray swaps loopback for the external address.
    from ray._private import ray_constants

    multi_node = ray_constants.ENABLE_RAY_CLUSTER
    ray_constants.ENABLE_RAY_CLUSTER = False
    try:
        # The dashboard (state API) is what Train V2 uses to clean up stopped trials: without it a trial
        # that ASHA stops is never cleaned up and later trials wait for their worker group forever.
        context = ray.init(address="local", include_dashboard=True, dashboard_host="127.0.0.1", **kwargs)
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = multi_node  # a later ray.init(address=...) finds its node as usual
    stop_with_this_process(context.address_info["session_dir"])  # its agents too, when this driver is SIGKILLed
    return dashboard_url(context)


def dashboard_url(context: Any) -> str | None:
    """The dashboard address of `ray.init`'s context as a URL ('127.0.0.1:8265' -> 'http://127.0.0.1:8265')."""
    address = getattr(context, "dashboard_url", None)
    if not address:
        return None
    return address if "://" in address else f"http://{address}"


def configure_ray_environment(storage: str) -> None:
    """Ray settings of this driver process (the user's own values win) and where Train workers store."""
    for name, value in RAY_SETTINGS.items():
        os.environ.setdefault(name, value)
    os.environ["NERPLAT_RAY_STORAGE"] = storage  # forwarded: Ray Train workers of multi-worker trials


def concurrency(arm: Arm, limit: int | None) -> int:
    """Trials of `arm` that fit the running Ray cluster at once, capped by the spec's max_concurrent."""
    import ray

    return trials_that_fit(arm, ray.cluster_resources(), limit)


def trials_that_fit(arm: Arm, available: dict[str, float], limit: int | None) -> int:
    """Trials of `arm` that fit in `available` resources at once (at least one), capped by `limit`."""
    resources = arm.resources
    per_trial = {"CPU": resources.cpus_per_worker * resources.workers, "GPU": resources.gpus_per_worker * resources.workers}
    per_trial |= {name: amount * resources.workers for name, amount in resources.custom.items()}
    fits = [math.floor(available.get(name, 0.0) / need + 1e-9) for name, need in per_trial.items() if need > 0]
    count = max(1, min(fits)) if fits else 1
    return min(count, limit) if limit else count


def placement_problem(arm: Arm, nodes: list[dict[str, float]]) -> str | None:
    """Why no trial of `arm` can ever be placed on Ray nodes with these total resources, or None.

    Each worker's bundle must fit on one node, and all bundles (plus the launcher's 0.01 CPU of a
    multi-worker trial) in the cluster.
    """
    resources = arm.resources
    bundle = {"CPU": resources.cpus_per_worker, "GPU": resources.gpus_per_worker, **resources.custom}
    bundle = {name: amount for name, amount in bundle.items() if amount > 0}
    if not any(all(node.get(name, 0.0) >= amount - 1e-9 for name, amount in bundle.items()) for node in nodes):
        largest = ", ".join(f"{name} {max((node.get(name, 0.0) for node in nodes), default=0.0):g}" for name in bundle)
        return f"arm {arm.id}: a worker needs {_amounts(bundle)}, but no Ray node has that much (largest: {largest})"
    need = {name: amount * resources.workers for name, amount in bundle.items()}
    if resources.workers > 1:
        need["CPU"] = need.get("CPU", 0.0) + 0.01
    total = {name: sum(node.get(name, 0.0) for node in nodes) for name in need}
    if any(total[name] < amount - 1e-9 for name, amount in need.items()):
        return (
            f"arm {arm.id}: a trial of {resources.workers} workers needs {_amounts(need)}, "
            f"but the cluster has {_amounts(total)}"
        )
    return None


def _amounts(resources: dict[str, float]) -> str:
    return ", ".join(f"{name} {amount:g}" for name, amount in resources.items())


def is_local(address: str) -> bool:
    host = address.split("://")[-1].rsplit(":", 1)[0]
    return address == "auto" or host in ("127.0.0.1", "localhost", "::1", "")




def path_component(name: str) -> str:
    """A path component for an arm or experiment id (slashes and odd characters replaced)."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
