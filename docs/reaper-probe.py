"""How long an embedded Ray cluster's processes outlive a SIGKILLed `nerplat run` (docs/performance.md,
"Ray's agents after a SIGKILLed driver").

Starts `nerplat run SPEC --tune-only --no-analyze` in a Unix session of its own (every process the
embedded Ray starts stays in it), waits until a trial worker (`ray::ImplicitFunc`) has run for
`--after` seconds, SIGKILLs the driver, then lists the session's processes from /proc every 0.2 s
and prints, for each process title, when its last process was last seen, in seconds after the kill
(or "still there" at `--wait`). The session's leftovers are SIGKILLed at the end.

Run from the repository root: `.venv/bin/python docs/reaper-probe.py [SPEC] [--after S] [--wait S]`
(default the integration tests' tiny run with 30 epochs, 5 s, 90 s). At a commit before
run/ray_reaper.py (49cd137) the same command measures the agents without the reaper.
"""

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TINY = REPO / "tests" / "integration" / "specs" / "tiny_run.yaml"
POLL_S = 0.2


def session_titles(session: int) -> dict[int, str]:
    """Live processes of the Unix session `session` -> their titles' first word (`ray::DashboardAgent`, a path)."""
    found = {}
    for entry in Path("/proc").iterdir():
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            title = (entry / "cmdline").read_bytes().split(b"\0")[0].decode(errors="replace")
        except (OSError, IndexError):
            continue
        if int(fields[3]) == session and fields[0] != "Z":
            found[int(entry.name)] = os.path.basename(title.split()[0]) if title else "?"
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("spec", nargs="?", type=Path, default=TINY)
    parser.add_argument("--after", type=float, default=5.0, help="seconds a trial worker runs before the kill")
    parser.add_argument("--wait", type=float, default=90.0, help="seconds to watch after the kill")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="reaper-probe-") as work:
        command = [str(Path(sys.executable).with_name("nerplat")), "run", str(args.spec), "--set", "train.epochs=30",
                   "--tune-only", "--no-analyze", "--workdir", work]
        env = {**os.environ, "NERPLAT_TEST_EXPERIMENT": "reaper_probe"}
        driver = subprocess.Popen(command, cwd=work, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                  start_new_session=True)
        try:
            while "ray::ImplicitFunc" not in session_titles(driver.pid).values():
                if driver.poll() is not None:
                    sys.exit(f"nerplat run ended (exit {driver.returncode}) before a trial worker started")
                time.sleep(POLL_S)
            time.sleep(args.after)
            last_seen = {title: 0.0 for title in session_titles(driver.pid).values()}  # gone before a poll: 0.0
            killed = time.monotonic()
            os.kill(driver.pid, signal.SIGKILL)
            driver.wait()
            while (titles := session_titles(driver.pid)) and time.monotonic() - killed < args.wait:
                for title in titles.values():
                    last_seen[title] = time.monotonic() - killed
                time.sleep(POLL_S)
            left = set(session_titles(driver.pid).values())
        finally:
            for pid in session_titles(driver.pid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
    for title, seconds in sorted(last_seen.items(), key=lambda item: item[1]):
        print(f"{title}: {'still there' if title in left else f'last seen {seconds:.1f} s after the kill'}")
    print(f"every process of the session gone: {'no' if left else 'yes'}")


if __name__ == "__main__":
    main()
