"""Where tests live: `make test-fast` runs tests/unit without the slow ones, so none may hide there; it
needs nothing but the venv, so no test there needs a system package; and every test runs under a timeout."""

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


def prerequisites(target: str) -> list[str]:
    """What the Makefile's `target:` line depends on."""
    line = next(line for line in (REPO / "Makefile").read_text().splitlines() if line.startswith(f"{target}:"))
    return line.split(":", 1)[1].split()


def test_make_test_fast_needs_nothing_but_the_venv():
    """A contributor's fast loop runs after `make install` alone, as any user and offline. Tests that need a
    system package (tcmalloc, Prometheus, PostgreSQL, Chromium) are `slow` ones under tests/integration, for
    which `make test` installs the packages: never skipped in test-fast, where a skip would read as a pass."""
    assert prerequisites("test-fast") == ["$(STAMP)"]
    assert {"tcmalloc", "prometheus", "postgres", "chromium"} <= set(prerequisites("test"))


# tests/support modules that run a program of a system package, and calls that need one installed
SYSTEM_PROGRAMS = re.compile(r"^(from|import) (prometheus_server|chromium)\b|installed_tcmalloc\(", re.M)


def test_no_unit_or_regression_test_needs_a_system_package():
    found = [
        str(path.relative_to(REPO))
        for folder in ("unit", "regression")
        for path in sorted((REPO / "tests" / folder).rglob("*.py"))
        if SYSTEM_PROGRAMS.search(path.read_text()) and path.name != "test_test_layout.py"
    ]
    assert found == [], f"these need a system package: move those tests to tests/integration, marked slow: {found}"
