"""Where tests live: `make test-fast` runs tests/unit without the slow ones, so none may hide there,
and every test runs under a timeout."""

import re
import tomllib

from repo_paths import REPO

SLOW_MARK = re.compile(r"\bmark\.slow\b|pytestmark\s*=.*\bslow\b")


def test_no_slow_test_lives_under_tests_unit():
    marked = [str(path.relative_to(REPO)) for path in (REPO / "tests" / "unit").rglob("*.py") if SLOW_MARK.search(path.read_text())]
    assert marked == [], f"slow tests belong under tests/integration (mirroring the package): {marked}"


def test_every_test_runs_under_a_timeout():
    options = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert options["timeout"] >= 600
    fast = next(line for line in (REPO / "Makefile").read_text().splitlines() if "pytest" in line and "'not slow'" in line)
    assert "--timeout" in fast and "tests/unit" in fast


def test_make_test_fast_installs_the_allocator_its_tests_check():
    """The unit tests of run/allocator.py need the tcmalloc an embedded Ray preloads; a skip would pass
    them on a machine where runs would not use it, so `make test-fast` installs it as `make test` does."""
    target = next(line for line in (REPO / "Makefile").read_text().splitlines() if line.startswith("test-fast:"))
    assert "tcmalloc" in target.split(":", 1)[1].split()
