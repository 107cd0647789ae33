"""What the small commands load: nothing heavy to print help or refuse bad input, torch only where a
tagger runs, and MLflow, Ray or Polars nowhere on predict, export, serve and train (seconds of CPU
each on a 2-core machine: docs/performance.md, "Start-up of small commands")."""

from __future__ import annotations

import subprocess
import sys
import time

from host_load import scaled
from import_probe import modules_loaded_by, offending
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


def imported_by(*args: str, cwd=None) -> set[str]:
    """Modules `nerplat ARGS` imported (from `-X importtime`), after checking that it succeeded."""
    command = [sys.executable, "-X", "importtime", "-m", "nerplat.cli", *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=scaled(300), cwd=cwd)
    assert done.returncode == 0, done.stderr[-2000:]
    return _imported(done.stderr)


def _imported(stderr: str) -> set[str]:
    return {line.rsplit("|", 1)[-1].strip() for line in stderr.splitlines() if line.startswith("import time:")}


def test_every_command_group_registers_without_torch_mlflow_ray_or_polars():
    loaded = modules_loaded_by(
        "import contextlib, io",
        "from nerplat.cli import main",
        "with contextlib.redirect_stdout(io.StringIO()): main(['predict', '--help'])",
    )
    assert "nerplat.cli.model_commands" in loaded and "nerplat.cli.run_commands" in loaded
    assert offending(loaded, NOT_FOR_HELP) == []


def test_bad_input_to_predict_is_refused_before_torch_loads(store):
    command = [sys.executable, "-X", "importtime", "-m", "nerplat.cli", "predict", NAME, "--text", "x", "--words", "bogus"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=scaled(120), cwd=store.workdir)
    assert done.returncode == 2 and "--words" in done.stderr
    assert offending(_imported(done.stderr), NOT_FOR_HELP) == []


def test_export_of_a_registered_model_loads_no_mlflow(store, tmp_path):
    loaded = imported_by("export", NAME, "--out", str(tmp_path / "out"), "--workdir", str(store.workdir))
    assert "torch" in loaded and offending(loaded, NOT_ON_SMALL_COMMANDS) == []


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


def test_train_in_process_loads_no_mlflow_ray_or_polars(tmp_path):
    (tmp_path / "spec.yaml").write_text(SPEC)
    loaded = imported_by("train", "spec.yaml", "-m", "ce", "--split", "dev", cwd=tmp_path)
    assert "torch" in loaded and offending(loaded, NOT_ON_SMALL_COMMANDS) == []
