"""The README's tour, command by command, as a new user types it: each line in a fresh `bash -l`
shell that first runs the tour's own `source .venv/bin/activate`.

Every command runs as in an 80-column terminal (COLUMNS=80) and must print no line wider than that
holding more than one word: a word longer than the line (a path, a URL) stands alone on its line,
for the terminal to wrap and a mouse to copy. Machine-readable stdout is exempt and parsed instead:
`--json` output (a JSON string cannot be broken) and `cluster render`'s manifest.

The shell starts in a temporary copy of the repository's `specs/`, `cluster/`, `dashboards/` and `docs/` whose `.venv` is
this interpreter's environment (what `make run` made). The Makefile's variables (NERPLAT_DATA,
HF_HUB_OFFLINE, TOKENIZERS_PARALLELISM) are removed, so the corpora must be found without them.
Only PYTHONPATH is kept, so the shell runs this tree's nerplat.

Decision on the long command: the tour's `nerplat run` is the quickstart's `smoke` profile with one
epoch (the tiny encoder; about a minute here), written that way in the README itself, so the test
runs it as written; the real quickstart takes 5-7 minutes and is what `make run` runs. The last
command, `nerplat ui`, serves until Ctrl-C: the test waits for the runs-table URL it prints, then
sends SIGINT, as the README says, and expects a clean stop.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from host_load import scaled
from shell_text import line_items
from rich.cells import cell_len

pytestmark = pytest.mark.slow

ROOT = Path(__file__).parents[2]
MAKEFILE_VARIABLES = ("NERPLAT_DATA", "HF_HUB_OFFLINE", "TOKENIZERS_PARALLELISM", "MLFLOW_TRACKING_URI", "RAY_ADDRESS")
WIDTH = 80


def tour_commands() -> list[str]:
    """The lines of the fenced bash block under the README's "## A tour" heading."""
    return [line for line in _tour_block("bash").splitlines() if line.strip()]


def tour_run_output() -> list[str]:
    """The lines the README says the tour's `nerplat run` ends with (its fenced text block)."""
    return _tour_block("text").splitlines()


def _tour_block(kind: str) -> str:
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## A tour") :]
    block = re.search(rf"```{kind}\n(.*?)```", section, re.S)
    assert block is not None, f"the tour has no ```{kind} block"
    return block.group(1)


@pytest.fixture(scope="module")
def checkout(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("tour")
    # cluster/base takes its Grafana dashboards from dashboards/grafana; `plan --pilot` reads a committed report in docs/results
    for name in ("specs", "cluster", "dashboards", "docs"):
        shutil.copytree(ROOT / name, folder / name)
    (folder / ".venv").symlink_to(Path(sys.prefix))
    return folder


def shell(command: str, folder: Path, **popen) -> subprocess.Popen:
    environment = {k: v for k, v in os.environ.items() if k not in MAKEFILE_VARIABLES} | {"COLUMNS": str(WIDTH)}
    return subprocess.Popen(
        ["bash", "-lc", f"source .venv/bin/activate && {command}"],
        cwd=folder, env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True, **popen,
    )  # fmt: skip


def test_the_tour_starts_by_activating_the_environment():
    commands = tour_commands()
    assert commands[0] == "source .venv/bin/activate"
    assert commands[-1].startswith("nerplat ui ")
    assert len(commands) >= 10


def test_every_tour_command_runs_as_written(checkout: Path):
    commands = tour_commands()[1:]
    for command in commands[:-1]:
        process = shell(command, checkout)
        output, errors = process.communicate(timeout=900)
        assert process.returncode == 0, f"`{command}` exited {process.returncode}:\n{output[-3000:]}\n{errors[-3000:]}"
        if command.startswith("nerplat run "):
            assert_ends_with_the_readmes_sample(output)
        if "--json" in command:
            json.loads(output)  # stdout holds the JSON alone
        elif command.startswith("nerplat cluster render"):
            assert all(manifest["kind"] for manifest in yaml.safe_load_all(output))
        else:
            assert_fits(command, output)
        assert_fits(command, errors)
    assert (checkout / "reports" / "quickstart_smoke" / "report.md").is_file()
    _serve_until_interrupted(commands[-1], checkout)


def _serve_until_interrupted(command: str, folder: Path) -> None:
    process = shell(command, folder)
    lines: list[str] = []
    deadline = time.monotonic() + scaled(120)
    try:
        while time.monotonic() < deadline:
            line = process.stdout.readline()
            if not line:
                break
            lines.append(line)
            if "#/experiments/" in line:
                break
        assert any("#/experiments/" in line for line in lines), "".join(lines)
    finally:
        os.killpg(process.pid, signal.SIGINT)
        rest, errors = process.communicate(timeout=60)
    assert process.returncode == 0, "".join(lines) + rest + errors
    assert_fits(command, "".join(lines) + rest + errors)


def assert_ends_with_the_readmes_sample(output: str) -> None:
    """The README shows what this commit prints: the smoke run is seeded, so its figures repeat."""
    sample = tour_run_output()
    lines = [line.rstrip() for line in output.splitlines()]
    assert lines[-len(sample) :] == [line.rstrip() for line in sample], (
        "the README's sample of the tour's `nerplat run` is not what it printed; it printed:\n" + "\n".join(lines[-len(sample) :])
    )


def assert_fits(command: str, text: str) -> None:
    """No line of `text` wider than WIDTH but a single word (a path or URL left whole, in a command
    with a shell's line continuation after it)."""
    wide = [line for line in text.splitlines() if cell_len(line.rstrip()) > WIDTH and len(line_items(line)) > 1]
    assert not wide, f"`{command}` printed lines wider than {WIDTH} columns:\n" + "\n".join(wide)
