"""Starting a RayJob: `kubectl apply` for KubeRay, or Ray's job API for a Ray cluster already running.

The job API path submits the RayJob's entrypoint to the Ray head's dashboard (port 8265), e.g. through
`kubectl port-forward svc/nerplat-head-svc 8265`. Ray token authentication (RAY_AUTH_MODE=token) needs
the cluster's token: taken from RAY_AUTH_TOKEN, else the file in RAY_AUTH_TOKEN_PATH, and sent as the
`Authorization: Bearer` header Ray's dashboard checks; without either, Ray's own token loader applies
(~/.ray/auth_token when RAY_AUTH_MODE=token). The token goes only over https or to a loopback address
(a port-forward), unless the user allows plain http to another machine.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import ipaddress
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from nerplat.cluster.manifests import dump_manifests
from nerplat.errors import Problem, UserInputError

TERMINAL_STATES = {"SUCCEEDED", "FAILED", "STOPPED"}


def auth_headers(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The Authorization header for Ray's dashboard from RAY_AUTH_TOKEN or RAY_AUTH_TOKEN_PATH, if set."""
    environ = os.environ if environ is None else environ
    token = environ.get("RAY_AUTH_TOKEN", "").strip()
    token_path = environ.get("RAY_AUTH_TOKEN_PATH")
    if not token and token_path:
        try:
            token = Path(token_path).read_text(encoding="utf-8").strip()
        except OSError as error:
            message = f"RAY_AUTH_TOKEN_PATH: cannot read the token: {error.strerror}"
            raise UserInputError(Problem(message, source=token_path)) from None
    return {"Authorization": f"Bearer {token}"} if token else {}


def refuse_token_over_plain_http(address: str, sends_token: bool, allow_plain_http: bool) -> None:
    """UserInputError when a token would be sent and `address` is plain http (or has no scheme, which
    Ray reaches over http) to a host other than this machine: anyone on the path could read the token."""
    if not sends_token or allow_plain_http:
        return
    parts = urlsplit(address if "://" in address else f"http://{address}")
    if parts.scheme.lower() != "http" or _is_loopback(parts.hostname or ""):
        return
    raise UserInputError(
        Problem(
            f"the Ray token would go in clear over http to {address}: use an https:// address, or a loopback one "
            "through `kubectl port-forward svc/<cluster>-head-svc 8265` (--address http://127.0.0.1:8265), "
            "or pass --allow-plain-http if every network between here and the cluster is trusted",
            path="--address",
        )
    )


def _is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a host name other than localhost: not known to stay on this machine
        return False


def refuse_malformed_job_address(address: str) -> None:
    """UserInputError unless `address` is an http(s) URL of a host (and port), or `auto`: Ray would
    raise a bare ValueError for it, or try to reach a host named with spaces."""
    if address == "auto":
        return
    parts = urlsplit(address if "://" in address else f"http://{address}")
    try:
        port_ok = parts.port is None or parts.port > 0
    except ValueError:
        port_ok = False
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname or any(c.isspace() for c in address) or not port_ok:
        raise UserInputError(
            Problem(
                f"{address!r} is not a Ray job API address: give http(s)://HOST:PORT, e.g. http://127.0.0.1:8265",
                path="--address",
            )
        )


def job_client(address: str, allow_plain_http: bool = False) -> Any:
    """Ray's JobSubmissionClient for `address`, carrying the token only where it may go."""
    from ray.job_submission import JobSubmissionClient

    headers = auth_headers()
    # Without RAY_AUTH_TOKEN(_PATH), Ray itself sends ~/.ray/auth_token when RAY_AUTH_MODE=token.
    sends_token = bool(headers) or os.environ.get("RAY_AUTH_MODE", "").strip().lower() == "token"
    refuse_token_over_plain_http(address, sends_token, allow_plain_http)
    return JobSubmissionClient(address, headers=headers)


def submit_rayjob_to_ray(rayjob: dict[str, Any], address: str, allow_plain_http: bool = False) -> str:
    """Submits a RayJob manifest's entrypoint (and runtime env) to the Ray job API; returns the job id."""
    spec = rayjob["spec"]
    runtime_env = yaml.safe_load(spec["runtimeEnvYAML"]) if spec.get("runtimeEnvYAML") else None
    return submit_to_ray(spec["entrypoint"], rayjob["metadata"]["name"], address, runtime_env, allow_plain_http)


def submit_to_ray(
    entrypoint: str, name: str, address: str, runtime_env: dict[str, Any] | None = None, allow_plain_http: bool = False
) -> str:
    """Submits `entrypoint` to the Ray job API at `address` (tagged with `name`); returns the job id."""
    from ray.exceptions import AuthenticationError

    try:
        client = job_client(address, allow_plain_http)
        return client.submit_job(entrypoint=entrypoint, runtime_env=runtime_env, metadata={"nerplat.rayjob": name})
    except AuthenticationError as error:
        raise UserInputError(
            Problem(
                f"the Ray cluster at {address} refused the request ({str(error).splitlines()[0]}): export "
                "RAY_AUTH_MODE=token and RAY_AUTH_TOKEN=<the cluster's token> (cluster/README.md shows how "
                "to read it from the Secret nerplat-ray-token)"
            )
        ) from None
    except ConnectionError as error:
        raise UserInputError(
            Problem(f"no Ray job API at {address} ({error}); is `kubectl port-forward svc/<cluster>-head-svc 8265` running?")
        ) from None


def wait_for_job(
    address: str,
    job_id: str,
    *,
    timeout_s: float | None = None,
    poll_s: float = 1.0,
    on_status: Callable[[str], None] = lambda status: None,
    allow_plain_http: bool = False,
) -> str:
    """Polls the job until it ends; returns SUCCEEDED, FAILED or STOPPED (TimeoutError after `timeout_s`)."""
    client = job_client(address, allow_plain_http)
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    last = None
    while True:
        status = str(client.get_job_status(job_id).value)
        if status != last:
            on_status(status)
            last = status
        if status in TERMINAL_STATES:
            return status
        if deadline is not None and time.monotonic() > deadline:
            raise TimeoutError(f"job {job_id} still {status} after {timeout_s} s")
        time.sleep(poll_s)


def apply_with_kubectl(rayjob: dict[str, Any], kubectl: str = "kubectl") -> str:
    """`kubectl apply -f -` with the RayJob on stdin; returns kubectl's output."""
    executable = shutil.which(kubectl)
    if executable is None:
        raise UserInputError(
            Problem(
                f"'{kubectl}' is not on PATH: install kubectl and point it at your cluster, or write the RayJob "
                "with `nerplat cluster render SPEC --out job.yaml` and apply it where kubectl is, or submit to a "
                "running Ray cluster with --address http://HOST:8265"
            )
        )
    result = subprocess.run(
        [executable, "apply", "-f", "-"], input=dump_manifests([rayjob]), capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        raise UserInputError(Problem(f"kubectl apply failed: {result.stderr.strip() or result.stdout.strip()}"))
    return result.stdout.strip()
