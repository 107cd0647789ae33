"""exit_process ends the program as Python's exit would, minus the teardown: threads finished, idle
thread pools stopped, atexit callbacks run, buffered output written, the exit code kept."""

from __future__ import annotations

import subprocess
import sys

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


def test_threads_atexit_callbacks_and_buffered_output_all_finish_before_the_exit_code(tmp_path):
    done = subprocess.run([sys.executable, "-c", PROGRAM, str(tmp_path)], capture_output=True, text=True, timeout=scaled(60))
    assert done.returncode == 3, done.stderr
    assert done.stdout == "line\n" * 20000
    assert (tmp_path / "thread").read_text() == "done" and (tmp_path / "atexit").read_text() == "ran"


def test_the_program_exits_with_its_commands_code():
    version = subprocess.run([sys.executable, "-m", "nerplat.cli", "--version"], capture_output=True, text=True, timeout=scaled(60))
    assert version.returncode == 0 and version.stdout.startswith("nerplat ")
    refused = [sys.executable, "-m", "nerplat.cli", "predict", "MODEL", "--text", "x", "--words", "bogus"]
    done = subprocess.run(refused, capture_output=True, text=True, timeout=scaled(60))
    assert done.returncode == 2 and "--words 'bogus'" in done.stderr


def test_main_given_arguments_returns_its_code_instead_of_ending_the_process(capsys):
    from nerplat.cli import main

    assert main(["--version"]) == 0 and capsys.readouterr().out.startswith("nerplat ")
