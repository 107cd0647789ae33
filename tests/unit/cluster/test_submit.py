from pathlib import Path

import pytest

from nerplat.cluster.submit import auth_headers, refuse_token_over_plain_http
from nerplat.errors import UserInputError


def test_token_from_environment_becomes_a_bearer_header():
    assert auth_headers({"RAY_AUTH_TOKEN": " abc \n"}) == {"Authorization": "Bearer abc"}
    assert auth_headers({}) == {}


def test_token_file_is_read_when_no_token_variable(tmp_path: Path):
    token = tmp_path / "token"
    token.write_text("from-file\n")
    assert auth_headers({"RAY_AUTH_TOKEN_PATH": str(token)}) == {"Authorization": "Bearer from-file"}
    assert auth_headers({"RAY_AUTH_TOKEN": "direct", "RAY_AUTH_TOKEN_PATH": str(token)}) == {"Authorization": "Bearer direct"}


def test_unreadable_token_file_is_a_user_error(tmp_path: Path):
    with pytest.raises(UserInputError, match="RAY_AUTH_TOKEN_PATH"):
        auth_headers({"RAY_AUTH_TOKEN_PATH": str(tmp_path / "missing")})


@pytest.mark.parametrize("address", ["http://10.0.0.5:8265", "http://ray.example.com:8265", "10.0.0.5:8265", "HTTP://ray.example.com"])
def test_the_token_is_not_sent_in_clear_to_another_machine(address):
    with pytest.raises(UserInputError) as error:
        refuse_token_over_plain_http(address, sends_token=True, allow_plain_http=False)
    message = str(error.value)
    assert address in message and "https://" in message and "--allow-plain-http" in message


@pytest.mark.parametrize(
    "address", ["http://127.0.0.1:8265", "http://localhost:8265", "http://[::1]:8265", "127.0.0.1:8265", "https://ray.example.com:8265"]
)
def test_loopback_and_https_may_carry_the_token(address):
    refuse_token_over_plain_http(address, sends_token=True, allow_plain_http=False)


def test_plain_http_elsewhere_is_allowed_when_asked_or_without_a_token():
    refuse_token_over_plain_http("http://10.0.0.5:8265", sends_token=True, allow_plain_http=True)
    refuse_token_over_plain_http("http://10.0.0.5:8265", sends_token=False, allow_plain_http=False)


# --- a real Ray head on 127.0.0.1 --------------------------------------------------------------

import os  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402

from ray_nodes import LocalRayCluster  # noqa: E402

BIN = Path(sys.executable).parent


@pytest.fixture
def ray_head(tmp_path: Path):
    """A token-protected Ray head of our own, stopped by its PID (never `ray stop`)."""
    workdir = tmp_path / "head-workdir"
    workdir.mkdir()
    cluster = LocalRayCluster(workdir)
    try:
        cluster.start_head()
        yield cluster.dashboard_url, cluster.token, workdir, tmp_path
    finally:
        cluster.stop()


def run_nerplat(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "nerplat"), *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_submit_to_a_real_ray_head_carries_the_token_and_waits(ray_head):
    from ray.job_submission import JobSubmissionClient

    address, token, head_workdir, tmp_path = ray_head
    job = tmp_path / "job.yaml"
    job.write_text(
        """\
apiVersion: ray.io/v1
kind: RayJob
metadata: {name: print-one}
spec:
  entrypoint: python -c "import os; print(1); print('cwd=' + os.getcwd())"
  rayClusterSpec:
    headGroupSpec:
      template:
        spec:
          containers: [{name: ray-head, image: nerplat}]
"""
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_AUTH")}
    env["HOME"] = str(tmp_path)  # no ~/.ray/auth_token of this machine's user can stand in

    refused = run_nerplat(["cluster", "submit", str(job), "--address", address], env, tmp_path)
    assert refused.returncode == 2, refused.stderr
    assert "refused the request" in refused.stderr and "RAY_AUTH_TOKEN" in refused.stderr

    done = run_nerplat(["cluster", "submit", str(job), "--address", address, "--wait"], {**env, "RAY_AUTH_TOKEN": token}, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCEEDED" in done.stderr
    job_id = done.stdout.split()[1]

    client = JobSubmissionClient(address, headers={"Authorization": f"Bearer {token}"})
    assert str(client.get_job_status(job_id).value) == "SUCCEEDED"
    logs = client.get_job_logs(job_id)
    assert "1" in logs.splitlines()
    # Entrypoints name specs relative to the head's working directory (the image's WORKDIR on KubeRay).
    assert f"cwd={head_workdir}" in logs
    assert client.get_job_info(job_id).metadata == {"nerplat.rayjob": "print-one"}
