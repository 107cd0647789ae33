"""No Docker engine here: check what a build would need instead of pretending to build."""

import re
import sys
import tomllib
from importlib.metadata import version

import yaml
from repo_paths import CLUSTER, REPO

DOCKERFILE = CLUSTER / "Dockerfile"


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    logical, pending = [], ""
    for line in DOCKERFILE.read_text().splitlines():
        if line.lstrip().startswith("#") or not line.strip():
            continue
        pending += line.rstrip()
        if pending.endswith("\\"):
            pending = pending[:-1] + " "
            continue
        keyword, _, rest = pending.strip().partition(" ")
        logical.append((keyword.upper(), rest.strip()))
        pending = ""
    return logical


def arg_defaults() -> dict[str, str]:
    return dict(rest.split("=", 1) for keyword, rest in instructions() if keyword == "ARG" and "=" in rest)


def copy_sources() -> list[str]:
    sources = []
    for keyword, rest in instructions():
        if keyword == "COPY":
            words = [word for word in rest.split() if not word.startswith("--")]
            sources += words[:-1]
    return sources


def test_every_copied_path_exists_in_the_repository():
    sources = copy_sources()
    assert {"pyproject.toml", "platform", "specs"} <= set(sources)
    for source in sources:
        path = REPO / source
        assert path.exists(), f"cluster/Dockerfile copies {source}, which is not in the repository"
        if path.is_dir():
            assert any(path.iterdir()), f"cluster/Dockerfile copies {source}/, which is empty"
    readme = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["readme"]
    assert readme in sources  # setuptools reads it while installing the package


def test_build_context_ignore_file_lets_through_what_is_copied():
    lines = [line for line in (CLUSTER / "Dockerfile.dockerignore").read_text().splitlines() if line and not line.startswith("#")]
    assert lines[0] == "**"  # everything else (.venv, mlruns, corpora) stays out of the context
    allowed = {line[1:].rstrip("/") for line in lines if line.startswith("!")}
    assert set(copy_sources()) <= allowed


def test_base_image_matches_the_ray_and_python_of_this_project_and_cluster():
    image = arg_defaults()["RAY_IMAGE"]
    python = f"py{sys.version_info.major}{sys.version_info.minor}"
    assert image == f"rayproject/ray:{version('ray')}-{python}-gpu"
    assert instructions()[1] == ("FROM", "${RAY_IMAGE}")
    raycluster = yaml.safe_load((CLUSTER / "base" / "raycluster.yaml").read_text())
    assert raycluster["spec"]["rayVersion"] == version("ray")


def test_torch_is_a_cuda_build_installed_before_the_package():
    args = arg_defaults()
    assert args["TORCH_VERSION"] == version("torch").split("+")[0]
    assert re.fullmatch(r"https://download\.pytorch\.org/whl/cu\d+", args["TORCH_INDEX_URL"])
    runs = [rest for keyword, rest in instructions() if keyword == "RUN"]
    torch_step = next(i for i, run in enumerate(runs) if '"torch==${TORCH_VERSION}"' in run and "${TORCH_INDEX_URL}" in run)
    package_step = next(i for i, run in enumerate(runs) if re.search(r"pip install [^&]*\s\.(\s|$)", run))
    assert torch_step < package_step


def test_image_carries_what_the_pods_run():
    runs = " ".join(rest for keyword, rest in instructions() if keyword == "RUN")
    assert '--no-deps "libauc==2.0.1"' in runs  # LibAUC's declared dependencies pull a CUDA torch
    assert '"psycopg[binary]' in runs and "boto3" in runs  # the MLflow server: PostgreSQL and S3
    workdir = next(rest for keyword, rest in instructions() if keyword == "WORKDIR")
    copies_specs = next(rest for keyword, rest in instructions() if keyword == "COPY" and " specs " in f" {rest} ")
    assert copies_specs.split()[-1] in ("./specs", f"{workdir}/specs")  # entrypoints say specs/<name>.yaml


def test_every_process_of_the_image_preloads_the_tcmalloc_it_installs():
    """The cluster's nodes choose their own malloc (run.allocator preloads it for an embedded Ray only)."""
    from nerplat.run.allocator import TCMALLOC

    runs = " ".join(rest for keyword, rest in instructions() if keyword == "RUN")
    assert "libtcmalloc-minimal4" in runs
    env = dict(rest.split("=", 1) for keyword, rest in instructions() if keyword == "ENV")
    # the soname of Debian's libtcmalloc-minimal4, the library an embedded Ray preloads (run.allocator)
    assert env["LD_PRELOAD"] == f"lib{TCMALLOC}.so.4"
