"""What would make Ray fail without saying why, checked before `ray.init`, each refusal naming its cause.

Ray reports a busy `--metrics-port` or a file-size limit (`ulimit -f`) as a node that "timed out
during startup" half a minute later; an address where nothing listens, or where something other
than a Ray cluster does, as "Failed to connect to GCS" for minutes; a token-protected cluster as a
bare ConnectionError. So the embedded cluster's port and file-size limit are checked before it
starts, and a cluster address is probed (a TCP connection, then a GCS handshake in a child process
that can be stopped) before it is joined. All are bad input: exit 2, nothing written: the run makes
them (`refuse_unusable_ray`) before it opens the MLflow store, whose SQLite file a file-size limit
would otherwise leave half-built ("disk I/O error").
"""

from __future__ import annotations

import errno
import re
import resource
import socket
import subprocess
import sys
import textwrap

from nerplat.errors import Problem, UserInputError

CONNECT_SECONDS = 5.0  # a TCP connection to a cluster's address
HANDSHAKE_SECONDS = 30.0  # the GCS answering its first call (Ray itself waits minutes)
_HOST = re.compile(r"\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9][A-Za-z0-9._-]*")  # a name, an IPv4 address or a bracketed IPv6 one
DRIVER_FILES_BYTES = 1 << 30  # beside Ray's object store: checkpoints, the MLflow store, model artifacts

# Run in a child process: a GCS client blocks in C++ until Ray's own timeout, which no thread can cut short.
_HANDSHAKE = textwrap.dedent(
    """
    import sys
    try:
        from ray._private.authentication.authentication_token_setup import maybe_enable_token_auth_if_token_available
        maybe_enable_token_auth_if_token_available(warn_if_disabled=False)  # as ray.init does for a cluster
    except ImportError:
        pass
    from ray._raylet import GcsClient
    from ray.exceptions import AuthenticationError
    try:
        GcsClient(address=sys.argv[1])
    except AuthenticationError as error:
        print(str(error).splitlines()[0])
        sys.exit(3)
    except Exception as error:
        print(f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}")
        sys.exit(4)
    """
)


def refuse_unusable_ray(address: str | None, flag: str, metrics_port: int | None) -> None:
    """Each refusal below that applies to a run joining the cluster at `address` (given by `flag`),
    or starting an embedded Ray when `address` is None; `metrics_port` is --metrics-port."""
    if address:
        if metrics_port is not None:
            raise UserInputError(
                Problem(
                    f"--metrics-port sets the port of an embedded Ray; the nodes of the cluster at {address} "
                    "serve their metrics on the port of their `ray start --metrics-export-port`",
                    path="--metrics-port",
                )
            )
        refuse_unreachable_cluster(address, flag)
        return
    if metrics_port is not None:
        refuse_busy_port(metrics_port)
    refuse_small_file_size_limit()


def refuse_busy_port(port: int) -> None:
    """The embedded Ray's metrics agent binds `port` on loopback; one that is taken is refused now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError as error:
            reason = "another process listens on it" if error.errno == errno.EADDRINUSE else error.strerror
            raise UserInputError(
                Problem(
                    f"port {port} on 127.0.0.1 cannot serve the metrics ({reason}): give a free port, or leave "
                    "--metrics-port out and Ray picks one",
                    path="--metrics-port",
                )
            ) from None


def refuse_small_file_size_limit() -> None:
    """The embedded Ray keeps its object store in one file as large as the store; a process whose file
    size limit (`ulimit -f`) is smaller kills Ray's node at start."""
    soft, _ = resource.getrlimit(resource.RLIMIT_FSIZE)
    if soft == resource.RLIM_INFINITY:
        return
    needed = object_store_bytes() + DRIVER_FILES_BYTES
    if soft < needed:
        raise UserInputError(
            f"the file-size limit of this shell (ulimit -f: {soft // 1024} KiB) is below what an embedded Ray needs "
            f"(its object store is one file of about {_gib(object_store_bytes())}, and checkpoints and the MLflow store "
            f"grow beside it: at least {_gib(needed)}): raise it (`ulimit -f unlimited`) or pass --address of a Ray "
            "cluster started elsewhere"
        )


def object_store_bytes() -> int:
    """The object store size Ray gives a new node on this machine (its default: a share of memory, capped)."""
    try:
        from ray._common.utils import get_system_memory
        from ray._private.utils import resolve_object_store_memory

        return int(resolve_object_store_memory(get_system_memory()))
    except (ImportError, TypeError, AttributeError):  # Ray moved its helpers: assume its usual cap
        return 2 << 30


def refuse_unreachable_cluster(address: str, flag: str) -> None:
    """A cluster address that answers nothing, answers as something else, or refuses this driver's
    token, is refused with the reason; `auto` is probed at the address Ray would join for it (the one
    `ray start` wrote, else a cluster running on this machine): unprobed, a cluster wanting a token
    printed twenty lines of gcs_client errors, then a refusal that did not name the token."""
    if address == "auto":
        refuse_unreachable_cluster(auto_address(flag), flag)
        return
    host, port = cluster_host_port(address, flag)
    try:
        socket.create_connection((host, port), timeout=CONNECT_SECONDS).close()
    except OSError as error:
        reason = "no answer" if isinstance(error, TimeoutError) else (error.strerror or str(error))
        raise UserInputError(
            Problem(
                f"no Ray cluster answers at {address} ({reason} within {CONNECT_SECONDS:g} s): start it (`ray start "
                "--head` prints the address to give) or correct the address",
                path=flag,
            )
        ) from None
    if address.startswith("ray://"):
        return  # a Ray Client server: ray.init reports its own handshake's errors (`joining_problem`)
    try:
        probe = subprocess.run(
            [sys.executable, "-c", _HANDSHAKE, f"{host}:{port}"], capture_output=True, text=True, timeout=HANDSHAKE_SECONDS
        )
    except subprocess.TimeoutExpired:
        raise UserInputError(
            Problem(
                f"something listens at {address}, but no Ray cluster answered there within {HANDSHAKE_SECONDS:g} s: give "
                "the GCS address `ray start --head` printed (port 6379 unless it was given another)",
                path=flag,
            )
        ) from None
    answer = probe.stdout.strip().splitlines()[-1] if probe.stdout.strip() else ""
    if probe.returncode == 3:
        raise UserInputError(
            Problem(
                f"the Ray cluster at {address} requires an authentication token, and {answer or 'this driver has none'}: "
                "set RAY_AUTH_TOKEN (or RAY_AUTH_TOKEN_PATH, or ~/.ray/auth_token) to the cluster's token (`ray "
                "get-auth-token` on its head node) and RAY_AUTH_MODE=token",
                path=flag,
            )
        )
    if probe.returncode != 0:
        raise UserInputError(Problem(
            f"the Ray cluster at {address} did not answer as a Ray cluster: {answer or probe.stderr.strip()[-300:]}", path=flag
        ))


def auto_address(flag: str) -> str:
    """The HOST:PORT `ray.init(address="auto")` joins, found as Ray finds it; refused when there is none."""
    from ray._private.services import canonicalize_bootstrap_address  # lazy: Ray, which the embedded path starts later

    try:
        found = canonicalize_bootstrap_address("auto")
    except (ConnectionError, ValueError) as error:
        found, reason = None, str(error).strip().splitlines()[0] if str(error).strip() else ""
    else:
        reason = "no address recorded"
    if not found:
        raise UserInputError(
            Problem(
                f"auto finds no Ray cluster on this machine ({reason}): start one (`ray start --head`) or give its "
                "address as HOST:PORT",
                path=flag,
            )
        )
    return found


def joining_problem(address: str, flag: str, error: Exception) -> UserInputError:
    """What `ray.init(address=...)` raised, as a refusal naming the address. A Ray Client address
    (ray://) is not probed first, and a server wanting a token this driver lacks only times out: the
    token is named as a cause to check."""
    first = str(error).strip().splitlines()[0] if str(error).strip() else ""
    token = (
        "; a cluster with token authentication (Ray's default) also needs RAY_AUTH_MODE=token and its token in "
        "RAY_AUTH_TOKEN (or RAY_AUTH_TOKEN_PATH, or ~/.ray/auth_token)"
        if address.startswith("ray://") else ""
    )
    return UserInputError(
        Problem(
            f"could not join the Ray cluster at {address} ({type(error).__name__}: {first}): "
            f"check the address and that the cluster runs{token}",
            path=flag,
        )
    )


def cluster_host_port(address: str, flag: str) -> tuple[str, int]:
    """The host and port of a cluster address (HOST:PORT or ray://HOST:PORT); any other form is
    refused at once, before anything is written, with the forms to give."""
    scheme, _, rest = address.rpartition("://")
    host, _, port = rest.rpartition(":")
    if scheme not in ("", "ray") or not _HOST.fullmatch(host) or not port.isdigit() or not 0 < int(port) < 65536:
        raise UserInputError(
            Problem(
                f"{address!r} is not a Ray cluster address: give HOST:PORT (the GCS, e.g. 10.0.0.5:6379) or ray://HOST:PORT "
                "(Ray Client, e.g. ray://10.0.0.5:10001), or auto for the cluster `ray start` started on this machine",
                path=flag,
            )
        )
    return host.strip("[]"), int(port)


def _gib(size: int) -> str:
    return f"{size / (1 << 30):.1f} GiB"
