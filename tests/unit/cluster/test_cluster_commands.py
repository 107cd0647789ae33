"""`nerplat cluster ...` through the real entry point (exit codes and messages as a user sees them)."""

import os
import stat
from pathlib import Path

import pytest
import yaml
from repo_paths import CLUSTER
from shell_text import joined_continuations

from nerplat.cli import main
from nerplat.cluster.manifests import Manifest
from nerplat.cluster.validate import validate_manifests
from nerplat.loopback import free_port

OVERLAY = str(CLUSTER / "overlays" / "example")


def test_render_writes_a_valid_rayjob(spec_repo: Path, monkeypatch, capsys):
    monkeypatch.chdir(spec_repo)
    assert main(["cluster", "render", "specs/tiny.yaml", "-p", "paper", "--cluster", OVERLAY, "--out", "job.yaml"]) == 0
    (rayjob,) = yaml.safe_load_all((spec_repo / "job.yaml").read_text())
    validate_manifests([Manifest(rayjob)])
    assert rayjob["spec"]["entrypoint"].startswith("nerplat run specs/tiny.yaml --profile paper --storage")
    assert "wrote job.yaml" in capsys.readouterr().err


def test_render_prints_to_stdout_and_takes_an_image(spec_repo: Path, monkeypatch, capsys):
    monkeypatch.chdir(spec_repo)
    assert main(["cluster", "render", "specs/tiny.yaml", "--cluster", str(CLUSTER / "base"), "--image", "r.io/n:3"]) == 0
    (rayjob,) = yaml.safe_load_all(capsys.readouterr().out)
    assert rayjob["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["image"] == "r.io/n:3"


def test_render_without_image_takes_the_dockerfiles_tag(spec_repo: Path, monkeypatch, capsys):
    from nerplat.cli import package_version

    monkeypatch.chdir(spec_repo)
    assert main(["cluster", "render", "specs/tiny.yaml", "--cluster", str(CLUSTER / "base")]) == 0
    captured = capsys.readouterr()
    (rayjob,) = yaml.safe_load_all(captured.out)
    head = rayjob["spec"]["rayClusterSpec"]["headGroupSpec"]
    assert head["template"]["spec"]["containers"][0]["image"] == f"nerplat:{package_version()}"
    build = f"  docker build -f cluster/Dockerfile -t nerplat:{package_version()} ."
    assert build in joined_continuations(captured.err).splitlines()  # a line of its own, to copy whole


def test_render_errors_exit_2_and_write_nothing(spec_repo: Path, monkeypatch, capsys):
    monkeypatch.chdir(spec_repo)
    (spec_repo / "specs" / "tiny.yaml").write_text("experiment: [not a name]\n")
    assert main(["cluster", "render", "specs/tiny.yaml", "--cluster", str(CLUSTER / "base"), "--out", "job.yaml"]) == 2
    assert "experiment" in capsys.readouterr().err
    assert not (spec_repo / "job.yaml").exists()


@pytest.mark.parametrize(
    ("flags", "expected"),
    [(["--address", "http://127.0.0.1:1", "--kubectl"], "choose one of"), (["--wait"], "--wait needs --address")],
)
def test_submit_flag_conflicts(spec_repo: Path, monkeypatch, capsys, flags, expected):
    monkeypatch.chdir(spec_repo)
    assert main(["cluster", "submit", "specs/tiny.yaml", *flags]) == 2
    assert expected in capsys.readouterr().err


def test_submit_without_kubectl_says_what_to_do(spec_repo: Path, monkeypatch, capsys):
    monkeypatch.chdir(spec_repo)
    monkeypatch.setenv("PATH", str(spec_repo / "empty"))
    assert main(["cluster", "submit", "specs/tiny.yaml", "--cluster", OVERLAY]) == 2
    err = capsys.readouterr().err
    assert "'kubectl' is not on PATH" in err and "--address" in err


def fake_kubectl(folder: Path) -> Path:
    """A stand-in kubectl that records its arguments and stdin, so the call can be checked offline."""
    folder.mkdir()
    script = folder / "kubectl"
    script.write_text(f'#!/bin/sh\necho "$@" > {folder}/args\ncat > {folder}/stdin\necho "rayjob.ray.io/x created"\n')
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return folder


def test_submit_spec_applies_the_rendered_rayjob_with_kubectl(spec_repo: Path, monkeypatch, capsys):
    monkeypatch.chdir(spec_repo)
    bin_dir = fake_kubectl(spec_repo / "bin")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    assert main(["cluster", "submit", "specs/tiny.yaml", "-p", "paper", "--cluster", OVERLAY, "--kubectl"]) == 0
    assert (bin_dir / "args").read_text().split() == ["apply", "-f", "-"]
    (applied,) = yaml.safe_load_all((bin_dir / "stdin").read_text())
    assert applied["kind"] == "RayJob" and applied["metadata"]["name"] == "nerplat-tiny-conll-paper"
    assert "created" in capsys.readouterr().out


def test_submit_of_a_broken_rayjob_file_is_refused_before_kubectl(spec_repo: Path, monkeypatch, capsys):
    monkeypatch.chdir(spec_repo)
    main(["cluster", "render", "specs/tiny.yaml", "--cluster", OVERLAY, "--out", "job.yaml"])
    job = spec_repo / "job.yaml"
    job.write_text(job.read_text().replace("shutdownAfterJobFinishes", "shutdownAfterJobFinish"))
    bin_dir = fake_kubectl(spec_repo / "bin")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    assert main(["cluster", "submit", "job.yaml"]) == 2
    assert "unknown field 'shutdownAfterJobFinish'; did you mean 'shutdownAfterJobFinishes'?" in capsys.readouterr().err
    assert not (bin_dir / "args").exists()


def test_validate_command(tmp_path: Path, capsys):
    assert main(["cluster", "validate", str(CLUSTER)]) == 0
    assert "overlays/example/ (kustomize)" in capsys.readouterr().out
    broken = tmp_path / "rc.yaml"
    broken.write_text((CLUSTER / "base" / "raycluster.yaml").read_text().replace("rayVersion", "rayVersoin"))
    assert main(["cluster", "validate", str(broken)]) == 2
    assert "did you mean 'rayVersion'?" in capsys.readouterr().err


def test_submit_spec_to_a_job_api_needs_no_image_and_names_an_unreachable_address(spec_repo: Path, monkeypatch, capsys):
    monkeypatch.chdir(spec_repo)
    address = f"http://127.0.0.1:{free_port()}"  # a port nothing listens on
    assert main(["cluster", "submit", "specs/tiny.yaml", "--address", address]) == 2
    err = capsys.readouterr().err
    assert f"no Ray job API at {address}" in err and "placeholder" not in err


@pytest.mark.parametrize("address", ["not an address", "ftp://head:8265", "http://head:port"])
def test_submit_to_a_malformed_job_api_address_is_refused(spec_repo: Path, monkeypatch, capsys, address):
    monkeypatch.chdir(spec_repo)
    assert main(["cluster", "submit", "specs/tiny.yaml", "--address", address]) == 2
    err = capsys.readouterr().err
    assert f"{address!r} is not a Ray job API address: give http(s)://HOST:PORT, e.g. http://127.0.0.1:8265 at --address" in err
    assert "Traceback" not in err


def test_submit_refuses_to_send_the_token_over_plain_http_to_another_machine(spec_repo: Path, monkeypatch, capsys):
    monkeypatch.chdir(spec_repo)
    monkeypatch.setenv("RAY_AUTH_TOKEN", "secret-token")
    address = "http://192.0.2.10:8265"  # TEST-NET: never contacted, the refusal comes first
    assert main(["cluster", "submit", "specs/tiny.yaml", "--address", address]) == 2
    err = capsys.readouterr().err
    assert "in clear" in err and "--allow-plain-http" in err and "secret-token" not in err


def test_submit_refuses_plain_http_when_ray_would_send_its_own_token_file(spec_repo: Path, monkeypatch, capsys):
    monkeypatch.chdir(spec_repo)
    monkeypatch.delenv("RAY_AUTH_TOKEN", raising=False)
    monkeypatch.delenv("RAY_AUTH_TOKEN_PATH", raising=False)
    monkeypatch.setenv("RAY_AUTH_MODE", "token")  # Ray then sends ~/.ray/auth_token by itself
    assert main(["cluster", "submit", "specs/tiny.yaml", "--address", "http://192.0.2.10:8265"]) == 2
    assert "--allow-plain-http" in capsys.readouterr().err
