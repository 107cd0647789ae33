"""`nerplat bench startup`: the wall and CPU seconds of the small commands a user meets first.

Each command runs in a fresh process (`python -m nerplat.cli ...` of this interpreter), `repeats`
times, the commands in turns (`bench.repeats.interleaved`), so a drift of the host slows them alike:

    --help                   the interpreter and the CLI: the floor of every command
    predict --text           one sentence tagged with MODEL
    export                   MODEL written to a new folder
    serve, first /ping       from the start of `nerplat serve MODEL` to its first HTTP 200 on /ping
    train --profile P        one arm of SPEC, in-process (only when a spec is given)

CPU seconds are user + system time of the process and the children it waited for (`os.wait4`):
on a busy machine the wall clock measures the other jobs too, the CPU much less so. A served
model is stopped at its first answer, so its CPU includes the few milliseconds of its shutdown.
The import breakdown (`import_seconds`) is `python -X importtime` of one `predict --text`, its
modules' own import time summed by top-level package: where a command's start-up goes.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

from nerplat.bench.repeats import Spread, check_repeats, interleaved
from nerplat.errors import Problem, UserInputError
from nerplat.loopback import answers, free_port

SENTENCE = "EU rejects German call to boycott British lamb ."
PING_TIMEOUT = 600.0  # seconds a served model may take to answer /ping on a busy machine
IMPORTS_SHOWN = 8


@dataclass(frozen=True)
class CommandTime:
    wall: float  # seconds from the start of the process to its end (serve: to its first /ping)
    cpu: float  # user + system seconds of the process and its waited-for children


@dataclass(frozen=True)
class CommandFigures:
    name: str
    command: str  # as a user would type it
    wall: Spread
    cpu: Spread


@dataclass(frozen=True)
class StartupBench:
    commands: list[CommandFigures]
    imports: dict[str, float]  # top-level package -> seconds of import (one predict --text, wall)
    repeats: int
    load_before: float  # 1-minute load average
    load_after: float
    cpu_capability: str  # torch.backends.cpu.get_cpu_capability()

    def as_dict(self) -> dict:
        return asdict(self)

    def rows(self) -> list[tuple[str, str]]:
        """(command, `wall median (min-max) s; CPU median (min-max) s`) rows."""
        return [(f.command, f"wall {f.wall.text(2)} s; CPU {f.cpu.text(2)} s") for f in self.commands]

    def import_rows(self) -> list[tuple[str, str]]:
        return [(package, f"{seconds:.2f} s") for package, seconds in self.imports.items()]


def nerplat_command(*args: str) -> list[str]:
    """`nerplat ARGS` as a process of this interpreter (so of its environment)."""
    return [sys.executable, "-m", "nerplat.cli", *args]


def time_command(argv: list[str]) -> CommandTime:
    """Runs `argv` to its end; UserInputError with its last output lines when it fails."""
    with tempfile.TemporaryFile() as errors:
        started = time.perf_counter()
        process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=errors)
        status, cpu = _reap(process)
        wall = time.perf_counter() - started
        if status != 0:
            raise _failed(argv, status, errors)
    return CommandTime(wall, cpu)


def time_serve(argv: list[str], port: int, timeout: float = PING_TIMEOUT) -> CommandTime:
    """Starts the server `argv` (listening on `port`), waits for its first HTTP 200 on /ping, stops it."""
    with tempfile.TemporaryFile() as errors:
        started = time.perf_counter()
        process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=errors)
        try:
            while not answers(f"http://127.0.0.1:{port}/ping", timeout=2):
                if process.poll() is not None:
                    raise _failed(argv, process.returncode, errors)
                if time.perf_counter() - started > timeout:
                    raise UserInputError(Problem(f"`{' '.join(argv)}` did not answer /ping within {timeout:.0f} s"))
                time.sleep(0.05)
            wall = time.perf_counter() - started
        finally:
            if process.returncode is None:
                process.send_signal(signal.SIGTERM)
                _, cpu = _reap(process)
    return CommandTime(wall, cpu)


def _reap(process: subprocess.Popen) -> tuple[int, float]:
    """The exit code and CPU seconds of a finished `process` (waited for here, with its resource use)."""
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    return process.returncode, usage.ru_utime + usage.ru_stime


def _failed(argv: list[str], status: int, errors) -> UserInputError:
    errors.seek(0)
    tail = errors.read().decode(errors="replace").strip().splitlines()[-3:]
    return UserInputError(Problem(f"`{' '.join(argv)}` exited with {status}: " + " | ".join(tail)))


def import_seconds(argv: list[str], shown: int = IMPORTS_SHOWN) -> dict[str, float]:
    """Seconds `argv` (a Python command) spent importing, by top-level package, largest first:
    each module's own time from `-X importtime` (wall clock), the rest as `other`."""
    command = [argv[0], "-X", "importtime", *argv[1:]]
    done = subprocess.run(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        tail = " | ".join(done.stderr.strip().splitlines()[-3:])
        raise UserInputError(Problem(f"`{' '.join(command)}` exited with {done.returncode}: {tail}"))
    per_package: Counter[str] = Counter()
    for line in done.stderr.splitlines():
        fields = [part.strip() for part in line.removeprefix("import time:").split("|")]
        if line.startswith("import time:") and fields[0].isdigit():  # not the header line
            per_package[fields[2].split(".")[0]] += int(fields[0]) / 1e6
    top = dict(per_package.most_common(shown))
    return top | {"other": sum(per_package.values()) - sum(top.values())}


def bench_startup(
    model: str,
    *,
    spec: Path | None = None,
    method: str | None = None,
    profile: str | None = "smoke",
    repeats: int = 5,
    workdir: Path = Path("."),
) -> StartupBench:
    """Times each small command `repeats` times in turns; MODEL as `nerplat predict` takes it, looked up from `workdir`."""
    check_repeats(repeats)
    if (spec is None) != (method is None):
        message = "give --spec and --method together (the arm `nerplat train` times), or neither"
        raise UserInputError(Problem(message, path="--spec"))
    place = ["--workdir", str(workdir)]
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="nerplat-bench-startup-") as scratch:
        port = free_port()
        shown = {
            "--help": "nerplat --help",
            "predict": f'nerplat predict {model} --text "{SENTENCE}"',
            "export": f"nerplat export {model} --out DIR",
            "serve": f"nerplat serve {model}: first /ping",
        }
        sides = {
            "--help": lambda repeat: time_command(nerplat_command("--help")),
            "predict": lambda repeat: time_command(nerplat_command("predict", model, "--text", SENTENCE, *place)),
            "export": lambda repeat: time_command(
                nerplat_command("export", model, "--out", f"{scratch}/export-{repeat}", *place)
            ),
            "serve": lambda repeat: time_serve(nerplat_command("serve", model, "--port", str(port), *place), port),
        }
        if spec is not None:
            profiled = ["--profile", profile] if profile else []
            shown["train"] = " ".join(["nerplat train", str(spec), *profiled, "-m", method])
            sides["train"] = lambda repeat: time_command(nerplat_command("train", str(spec), *profiled, "-m", method))
        measured = interleaved(sides, repeats)
        imports = import_seconds(nerplat_command("predict", model, "--text", SENTENCE, *place))
    figures = [
        CommandFigures(name, shown[name], Spread.of([t.wall for t in times]), Spread.of([t.cpu for t in times]))
        for name, times in measured.items()
    ]
    return StartupBench(figures, imports, repeats, load_before, os.getloadavg()[0], _cpu_capability())


def _cpu_capability() -> str:
    import torch  # lazy: the commands are timed in their own processes; this one needs torch only here

    return torch.backends.cpu.get_cpu_capability()
