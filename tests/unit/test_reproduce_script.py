"""docs/results/reproduce.sh turns `nerplat plan --cost --json` into RUN.md's prediction line."""

from __future__ import annotations

import json
import re
import subprocess
import sys

from repo_paths import REPO


def test_the_prediction_line_reads_plan_costs_json_on_this_python():
    script = (REPO / "docs" / "results" / "reproduce.sh").read_text()
    (snippet,) = [code for code in re.findall(r"python\" -c '([^']+)'", script) if '"cost"' in code]
    printed = subprocess.run([sys.executable, "-c", snippet], input=json.dumps({"cost": {"wall_s": 5430.0}}),
                             capture_output=True, text=True, check=True).stdout
    assert printed.strip() == "90.5 min"


def test_run_md_names_the_precision_the_runs_recorded_read_from_the_plans_experiment():
    """The experiment comes from the same `plan --cost --json`; its runs' precision lines go into RUN.md."""
    script = (REPO / "docs" / "results" / "reproduce.sh").read_text()
    (snippet,) = [code for code in re.findall(r"python\" -c '([^']+)'", script) if '"experiment"' in code]
    printed = subprocess.run([sys.executable, "-c", snippet], input=json.dumps({"experiment": "mom-conll", "cost": {}}),
                             capture_output=True, text=True, check=True).stdout
    assert printed.strip() == "mom-conll"
    assert '-m nerplat.estimate.precision_used --tracking-uri "sqlite:///$work/mlflow.db"' in script
    assert "\n$precision\n" in script  # its lines stand in RUN.md's list
