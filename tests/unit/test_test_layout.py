"""Where tests live: `make test-fast` runs tests/unit without the slow ones, so none may hide there,
and every test runs under a timeout."""

import re
import tomllib

from repo_paths import REPO

SLOW_MARK = re.compile(r"\bmark\.slow\b|pytestmark\s*=.*\bslow\b")


def test_no_slow_test_lives_under_tests_unit():
    marked = [
        str(path.relative_to(REPO)) for path in (REPO / "tests" / "unit").rglob("*.py") if SLOW_MARK.search(path.read_text())
    ]
    assert marked == [], f"slow tests belong under tests/integration (mirroring the package): {marked}"


def test_every_test_runs_under_a_timeout():
    options = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert options["timeout"] >= 600
    fast = next(line for line in (REPO / "Makefile").read_text().splitlines() if "pytest" in line and "'not slow'" in line)
    assert "--timeout" in fast and "tests/unit" in fast


def test_make_test_fast_installs_the_programs_its_tests_need():
    """Unit tests check that trial workers preload tcmalloc (run/allocator.py) and run promtool and
    Prometheus on the cluster's scrape configuration; a skip would pass them where they never ran, so
    `make test-fast` installs both as `make test` does."""
    target = next(line for line in (REPO / "Makefile").read_text().splitlines() if line.startswith("test-fast:"))
    assert {"tcmalloc", "prometheus"} <= set(target.split(":", 1)[1].split())
