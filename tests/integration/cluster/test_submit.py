"""`nerplat cluster submit` against a real, token-protected Ray head on 127.0.0.1."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from ray_nodes import LocalRayCluster

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

    done = run_nerplat(
        ["cluster", "submit", str(job), "--address", address, "--wait"], {**env, "RAY_AUTH_TOKEN": token}, tmp_path
    )
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
