"""The program ends as Python's exit would, minus the teardown: threads finished, idle thread pools
stopped, atexit callbacks run, buffered output written, the exit code kept on every path (done, bad
input, an exception, Ctrl-C, a reader that left); `main(argv)` returns its code instead."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest
from host_load import scaled

PROGRAM = """
import atexit, sys, threading, time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from nerplat.cli.process_exit import exit_process

folder = Path(sys.argv[1])
atexit.register(lambda: (folder / "atexit").write_text("ran"))
def late_writer():
    time.sleep(0.5)
    (folder / "thread").write_text("done")
threading.Thread(target=late_writer).start()
ThreadPoolExecutor(2).submit(print, "pool", file=sys.stderr)  # left idle, never shut down
sys.stdout.write("line\\n" * 20000)  # buffered: a pipe is not a terminal
exit_process(3)
"""

# the `nerplat` program with two more commands: one that waits to be interrupted, one that fails
COMMANDS = """
import sys, time
from nerplat.cli import _register_commands, app, main

_register_commands()

@app.command("nap")
def nap() -> None:
    print("buffered before the nap")
    print("ready", file=sys.stderr, flush=True)
    time.sleep(600)

@app.command("boom")
def boom() -> None:
    print("buffered before the failure")
    raise RuntimeError("the command failed")

sys.argv = ["nerplat", *sys.argv[1:]]
main()
"""


def program(*args: str, **popen) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", COMMANDS, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen
    )


def test_threads_atexit_callbacks_and_buffered_output_all_finish_before_the_exit_code(tmp_path):
    done = subprocess.run([sys.executable, "-c", PROGRAM, str(tmp_path)], capture_output=True, text=True, timeout=scaled(60))
    assert done.returncode == 3, done.stderr
    assert done.stdout == "line\n" * 20000
    assert (tmp_path / "thread").read_text() == "done" and (tmp_path / "atexit").read_text() == "ran"


def test_the_program_exits_with_its_commands_code():
    version = subprocess.run(
        [sys.executable, "-m", "nerplat.cli", "--version"], capture_output=True, text=True, timeout=scaled(60)
    )
    assert version.returncode == 0 and version.stdout.startswith("nerplat ")
    refused = [sys.executable, "-m", "nerplat.cli", "predict", "MODEL", "--text", "x", "--words", "bogus"]
    done = subprocess.run(refused, capture_output=True, text=True, timeout=scaled(60))
    assert done.returncode == 2 and "--words 'bogus'" in done.stderr


def test_an_exception_prints_its_traceback_and_exits_1_after_the_output():
    process = program("boom")
    out, err = process.communicate(timeout=scaled(60))
    assert process.returncode == 1 and out == "buffered before the failure\n"
    assert "Traceback" in err and "RuntimeError: the command failed" in err


def test_ctrl_c_exits_130_after_the_output():
    process = program("nap")
    assert process.stderr.readline() == "ready\n"
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=scaled(60))
    assert process.returncode == 130 and out == "buffered before the nap\n" and "Traceback" not in err


@pytest.mark.parametrize("reader", ["head -1", "true"])
def test_a_reader_that_leaves_early_gets_no_traceback(reader):
    """`nerplat --help | head -1`: rich writes each print through, so a write after the reader has left
    fails while the command runs and click ends it with 1; `head` may leave after the last write
    (then 0), `true` leaves before the first."""
    process = subprocess.Popen(
        ["bash", "-c", f"{sys.executable} -m nerplat.cli --help | {reader}; exit ${{PIPESTATUS[0]}}"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    out, err = process.communicate(timeout=scaled(120))
    assert len(out.splitlines()) == (1 if reader == "head -1" else 0) and err == ""
    assert process.returncode in ((0, 1) if reader == "head -1" else (1,))


def test_main_given_arguments_returns_its_code_instead_of_ending_the_process(capsys):
    from nerplat.cli import main

    assert main(["--version"]) == 0 and capsys.readouterr().out.startswith("nerplat ")
    assert main(["predict", "MODEL", "--text", "x", "--words", "bogus"]) == 2


def test_a_sys_exit_code_becomes_the_status_python_would_give(capsys):
    from nerplat.cli.process_exit import exit_status

    assert (exit_status(None), exit_status(0), exit_status(4)) == (0, 0, 4)
    assert exit_status("no model") == 1 and capsys.readouterr().err == "no model\n"
