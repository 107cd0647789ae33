# The README's two commands: `make run` and `make test`. Both set everything up on a fresh clone.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export NERPLAT_DATA ?= $(abspath ../shared/data)
export HF_HUB_OFFLINE ?= 1
export TOKENIZERS_PARALLELISM ?= false

.PHONY: run test test-fast install tcmalloc postgres prometheus chromium screenshots clean

# torch: on machines without an NVIDIA GPU take the 2.13.0 CPU build (the unpinned wheel is a
# multi-GB CUDA build); GPU machines let pip choose. LibAUC goes in with --no-deps because its
# declared dependencies pull a CUDA torch and torch_geometric; without them AUCMLoss, PESG and
# libauc.metrics import and work. It goes in last: a later pip install checks the installed packages'
# declared dependencies and prints "ERROR: pip's dependency resolver ..." for LibAUC's missing ones,
# which reads as a failed install; --no-deps skips that check.
# The bench extra is installed too: tests run `nerplat bench peer`, whose Trainer needs accelerate.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi >/dev/null 2>&1; then \
	  $(BIN)/pip install --quiet torch; else $(BIN)/pip install --quiet torch==2.13.0; fi
	$(BIN)/pip install --quiet -e '.[test,bench]'
	$(BIN)/pip install --quiet --no-deps libauc==2.0.1
	touch $(STAMP)

install: $(STAMP)

# tcmalloc, which an embedded Ray's trial workers preload (nerplat/run/allocator.py: on glibc's malloc an
# MRC trial worker grew by 0.6 GB a minute; Debian package, a few seconds; root on CI machines).
tcmalloc:
	@ldconfig -p | grep -q libtcmalloc_minimal.so.4 || \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends libtcmalloc-minimal4 >/dev/null)

# PostgreSQL server binaries, for the MLflow-on-PostgreSQL test (Debian package; root on CI machines).
postgres:
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null)

# Prometheus, for the test that lets a real Prometheus scrape a run's metrics (Debian package, 1-2 min;
# its service is not started: the test runs its own on 127.0.0.1).
prometheus:
	@command -v prometheus >/dev/null 2>&1 || \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null)

# Chromium, for the tests that look at the MLflow UI in a real browser (Debian package; root on CI machines).
chromium:
	@command -v chromium >/dev/null 2>&1 || \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null)

# The screenshots in docs/images, taken by the browser tests from a fresh tiny run (docs/tracking.md).
screenshots: $(STAMP) chromium
	mkdir -p docs/images
	NERPLAT_SCREENSHOT_DIR=docs/images $(BIN)/python -m pytest -q tests/integration/test_mlflow_ui.py

run: $(STAMP) tcmalloc
	$(BIN)/nerplat run specs/quickstart.yaml --resume

# Two pytest workers (TEST_WORKERS=1 for one); the suite's measured times are in docs/performance.md,
# "The test suite".
TEST_WORKERS ?= 2

test: $(STAMP) tcmalloc postgres prometheus chromium
	$(BIN)/ruff check platform tests
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist worksteal --durations=25

# The unit and regression tests alone: no real Ray, MLflow server or MiniLM, and no system package (those are
# the `slow` tests, under tests/integration, such as the tcmalloc and Prometheus ones), so after `make install`
# it needs no root and no network. A test that hangs fails after 300 s instead of pyproject.toml's `timeout`.
test-fast: $(STAMP)
	$(BIN)/ruff check platform tests
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist worksteal -m 'not slow' --timeout 300 --durations=10 tests/unit tests/regression

clean:
	rm -rf $(VENV) .nerplat mlflow.db optuna.db mlruns mlartifacts reports
