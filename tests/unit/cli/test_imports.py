"""What the small commands load: nothing heavy to print help or refuse bad input, torch only where a
tagger runs, and MLflow, Ray or Polars nowhere on predict, export, serve and train (seconds of CPU
each on a 2-core machine: docs/performance.md, "Start-up of small commands")."""

from __future__ import annotations

import subprocess
import sys
import time
from types import SimpleNamespace

import pytest
from host_load import scaled
from import_probe import modules_after_commands, modules_loaded_by, offending
from registered_tagger import NAME

from nerplat.loopback import answers, free_port

NOT_ON_SMALL_COMMANDS = ("mlflow", "ray", "polars", "optuna", "sqlalchemy")
NOT_FOR_HELP = ("torch", "transformers", "pandas", "sklearn", "seqeval", "scipy", "starlette", "uvicorn", *NOT_ON_SMALL_COMMANDS)
SPEC = """experiment: import_check
dataset: conll2003
model: {encoder: tiny, max_length: 48}
train: {epochs: 1, batch_size: 8, lr: 1.0e-3, dev_subset: 20, threads: 1}
samplers: [{low_resource: {size: 16, partitions: 1}}]
methods:
  ce: {loss: ce}
replicate: {seeds: 1}
"""


@pytest.fixture(scope="module")
def small_commands(store, tmp_path_factory) -> SimpleNamespace:
    """Refused input to predict, predict of a registered model and of a run, export and train, run in turn
    in one new interpreter (each started anew cost 5 s of CPU, most of it torch's import): each command's
    exit code and what had been imported by its end, by it or a command before it."""
    folder = tmp_path_factory.mktemp("small-commands")
    (folder / "spec.yaml").write_text(SPEC)
    workdir = ("--workdir", str(store.workdir))
    commands = {
        "refused": ("predict", NAME, "--text", "x", "--words", "bogus", *workdir),
        "predict_name": ("predict", NAME, "--text", "EU rejects .", *workdir),
        "predict_run": ("predict", store.run_id, "--text", "EU rejects .", *workdir),
        "export": ("export", NAME, "--out", str(folder / "out"), *workdir),
        "train": ("train", "spec.yaml", "-m", "ce", "--split", "dev"),
    }
    runs, stderr = modules_after_commands(list(commands.values()), folder, timeout=scaled(900))
    return SimpleNamespace(**dict(zip(commands, runs)), stderr=stderr, folder=folder)


def _imported(stderr: str) -> set[str]:
    """Modules a process started with `-X importtime` imported, from its stderr."""
    return {line.rsplit("|", 1)[-1].strip() for line in stderr.splitlines() if line.startswith("import time:")}


def test_every_command_group_registers_without_torch_mlflow_ray_or_polars():
    loaded = modules_loaded_by(
        "import contextlib, io",
        "from nerplat.cli import main",
        "with contextlib.redirect_stdout(io.StringIO()): main(['predict', '--help'])",
    )
    assert "nerplat.cli.model_commands" in loaded and "nerplat.cli.run_commands" in loaded
    assert offending(loaded, NOT_FOR_HELP) == []


def test_bad_input_to_predict_is_refused_before_torch_loads(small_commands):
    code, loaded = small_commands.refused
    assert code == 2 and "--words" in small_commands.stderr
    assert offending(loaded, NOT_FOR_HELP) == []


def test_predict_of_a_registered_model_or_a_run_loads_no_mlflow(small_commands):
    """What makes a one-sentence predict take seconds less: MLflow (3 s of CPU here) is not imported."""
    (by_name, loaded_by_name), (by_run, loaded) = small_commands.predict_name, small_commands.predict_run
    assert by_name == by_run == 0 and "torch" in loaded_by_name and "Downloading" not in small_commands.stderr
    assert offending(loaded, (*NOT_ON_SMALL_COMMANDS, "seqeval")) == []


def test_export_of_a_registered_model_loads_no_mlflow(small_commands):
    code, loaded = small_commands.export
    assert code == 0 and (small_commands.folder / "out").is_dir() and offending(loaded, NOT_ON_SMALL_COMMANDS) == []


def test_serve_answers_its_first_ping_without_mlflow(store, tmp_path):
    port = free_port()
    log = tmp_path / "serve.err"
    command = [
        sys.executable, "-X", "importtime", "-m", "nerplat.cli", "serve", NAME, "--port", str(port),
        "--workdir", str(store.workdir),
    ]
    with log.open("w") as errors:
        server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=errors)
        try:
            deadline = time.monotonic() + scaled(120)
            while not answers(f"http://127.0.0.1:{port}/ping", timeout=2):
                assert server.poll() is None and time.monotonic() < deadline, log.read_text()[-2000:]
                time.sleep(0.2)
        finally:
            server.terminate()
            server.wait(timeout=scaled(60))
    loaded = _imported(log.read_text())
    assert "torch" in loaded and "uvicorn" in loaded and offending(loaded, NOT_ON_SMALL_COMMANDS) == []


def test_train_in_process_loads_no_mlflow_ray_or_polars(small_commands):
    code, loaded = small_commands.train
    assert code == 0 and offending(loaded, NOT_ON_SMALL_COMMANDS) == []
